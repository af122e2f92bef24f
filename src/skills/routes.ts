import { CatalogueSlugParamSchema, SkillCatalogueSchema, SkillEntrySchema } from "../agents/schemas";
import { onlyOneRemoved } from "../agents/subsets";
import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { createRouter, jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { installSkill, listSkills, uninstallSkill } from "./catalogue";

/** The platform's skill catalogue, with install and uninstall per workspace. */
export const skillsRouter = createRouter();
const route = routesOf(skillsRouter, ["Skills and MCP servers"]);

const slugParams = { params: CatalogueSlugParamSchema };

route({ scope: "agents:read" }, "GET /v1/api/skills", "The skill catalogue, with what this workspace installed", {
  description:
    "Ordered by slug. Nothing is installed in a new workspace. A skill whose configuration is missing in " +
    "this deployment is `available: false` with an `unavailable_reason`, and offers agents no tool.",
  responses: { 200: jsonResponse(SkillCatalogueSchema, "The catalogue") },
}).handle(async (c) => c.json({ skills: await listSkills(c.env, c.var.caller.workspace.id) }, 200));
route("admin", "PUT /v1/api/skills/{slug}", "Install a skill for the workspace", {
  description: "Idempotent. No request body.",
  request: slugParams,
  responses: {
    400: problemResponse("`validation_failed`: a slug longer than 100 characters"),
    200: jsonResponse(SkillEntrySchema, "The installed skill"),
    404: problemResponse("No such skill in the catalogue"),
  },
}).handle(async (c) => {
  const { slug } = c.req.valid("param");
  const { entry } = await installSkill(
    c.env,
    c.var.caller.workspace.id,
    slug,
    callerEvent(c, { kind: "skill.install", target: `skill:${slug}`, details: { slug } }),
  );
  return c.json(entry, 200);
});
route("admin", "DELETE /v1/api/skills/{slug}", "Uninstall a skill from the workspace", {
  description:
    "Idempotent. The skill is removed from every agent's enabled subset in the same transaction. " +
    onlyOneRemoved("skill", "only_skill_removed"),
  request: slugParams,
  responses: {
    400: problemResponse("`validation_failed`: a slug longer than 100 characters"),
    200: jsonResponse(SkillEntrySchema, "The uninstalled skill"),
    404: problemResponse("No such skill in the catalogue"),
  },
}).handle(async (c) => {
  const { slug } = c.req.valid("param");
  const { entry } = await uninstallSkill(
    c.env,
    c.var.caller.workspace.id,
    slug,
    callerEvent(c, { kind: "skill.uninstall", target: `skill:${slug}`, details: { slug } }),
  );
  return c.json(entry, 200);
});
