import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AuditEventInput, AuditEventOf } from "../audit/events";
import { problemResponse } from "../platform/problem";
import { callerEvent } from "./audit";
import type { AppEnv } from "./context";
import { routesOf } from "./endpoint";
import { jsonResponse } from "./route";

const SlugParamSchema = z.object({
  slug: z
    .string()
    .max(100)
    .openapi({ param: { name: "slug", in: "path" }, description: "The catalogue entry's slug" }),
});

type Change<E> = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) => Promise<{ entry: E }>;

/** A platform catalogue whose entries each workspace installs: its list as the workspace sees it, install, uninstall. */
export type Catalogue<E> = {
  list: (env: Env, workspaceId: string) => Promise<E[]>;
  install: Change<E>;
  uninstall: Change<E>;
};

export type CatalogueDoc = {
  names: {
    /** `/v1/api/skills`: the list; `/{slug}` below it installs (PUT) and uninstalls (DELETE). */
    path: `/${string}`;
    /** The list's key in the response body, as its schema names it. */
    key: string;
    /** One entry, as the summaries and descriptions name it: `["skill", "a skill"]`. */
    noun: readonly [noun: string, withArticle: string];
  };
  schemas: { list: z.ZodType; entry: z.ZodType };
  summary: string;
  description: string;
  /** What becomes of the agents that had enabled an uninstalled entry. */
  uninstalled: string;
  event: (change: "install" | "uninstall", slug: string) => AuditEventOf;
};

/**
 * The routes of a catalogue: the list for any member holding `agents:read`, and idempotent
 * install and uninstall of one entry for admins, each answering the entry.
 */
export function catalogueRoutes<E>(router: OpenAPIHono<AppEnv>, catalogue: Catalogue<E>, doc: CatalogueDoc): void {
  const route = routesOf(["Skills and MCP servers"], router);
  const {
    path,
    key,
    noun: [noun, withArticle],
  } = doc.names;
  route({ scope: "agents:read" }, `GET ${path}`, doc.summary, {
    description: doc.description,
    responses: { 200: [doc.schemas.list, "The catalogue"] },
  }).handle(async (c) => c.json({ [key]: await catalogue.list(c.env, c.var.caller.workspace.id) }, 200));

  const changes = {
    install: { method: "PUT", summary: `Install ${withArticle} for the workspace`, description: "No request body." },
    uninstall: {
      method: "DELETE",
      summary: `Uninstall ${withArticle} from the workspace`,
      description: `The ${noun} is removed from every agent's enabled subset in the same transaction. ${doc.uninstalled}`,
    },
  } as const;
  for (const change of ["install", "uninstall"] as const) {
    const { method, summary, description } = changes[change];
    route("admin", `${method} ${path}/{slug}`, summary, {
      description: `Idempotent. ${description}`,
      params: SlugParamSchema,
      responses: {
        200: jsonResponse(doc.schemas.entry, `The ${change}ed ${noun}`),
        400: "`validation_failed`: a slug longer than 100 characters",
        404: problemResponse(`No such ${noun} in the catalogue`),
      },
    }).handle(async (c) => {
      const { slug } = c.req.valid("param");
      const event = callerEvent(c, doc.event(change, slug));
      const { entry } = await catalogue[change](c.env, c.var.caller.workspace.id, slug, event);
      return c.json(entry as object, 200);
    });
  }
}
