import { SkillCatalogueSchema, SkillEntrySchema } from "../agents/schemas";
import { onlyOneRemoved } from "../agents/subsets";
import { catalogueRoutes } from "../http/catalogue";
import { createRouter } from "../http/route";
import { skillCatalogue } from "./catalogue";

/** The platform's skill catalogue, with install and uninstall per workspace. */
export const skillsRouter = createRouter();

catalogueRoutes(skillsRouter, skillCatalogue, {
  names: { path: "/v1/api/skills", key: "skills", noun: ["skill", "a skill"] },
  schemas: { list: SkillCatalogueSchema, entry: SkillEntrySchema },
  summary: "The skill catalogue, with what this workspace installed",
  description:
    "Ordered by slug. Nothing is installed in a new workspace. A skill whose configuration is missing in this deployment is `available: false` with an `unavailable_reason`, and offers agents no tool.",
  uninstalled: onlyOneRemoved("skill", "only_skill_removed"),
  event: (change, slug) => ({ kind: `skill.${change}`, target: `skill:${slug}`, details: { slug } }),
});
