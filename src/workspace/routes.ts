import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { AvailabilitySchema, RenameResultSchema, SetSlugRequestSchema, SlugQuerySchema } from "./schemas";
import { renameWorkspace, slugAvailability } from "./service";

const route = routesOf(["Workspace"]);

route(
  "authenticated",
  "GET /v1/api/admin/workspace/slug/available",
  "Check whether a workspace handle is available (advisory)",
  {
    description: "Any candidate gets a verdict; one that is not a well-formed handle (of any length) is `invalid`.",
    query: SlugQuerySchema,
    responses: { 200: [AvailabilitySchema, "The verdict"], 400: "Missing slug" },
  },
).handle(async (c) => c.json(await slugAvailability(c.env, c.req.valid("query").slug), 200));

route("admin-role", "POST /v1/api/admin/workspace/slug", "Rename the workspace handle", {
  description:
    "A workspace admin's credential with any scope (`role:admin`). Re-aliases the email slug to match; the old email slug keeps routing for 30 days. Errors carry code `invalid`, `reserved` or `taken`.",
  body: SetSlugRequestSchema,
  responses: { 200: [RenameResultSchema, "The rename result"], 400: "Invalid, reserved or taken handle" },
}).handle(async (c) => {
  const result = await renameWorkspace(c.env, c.var.caller.workspace.id, c.req.valid("json").slug, (r) =>
    callerEvent(c, {
      kind: "workspace.slug",
      target: `workspace:${c.var.caller.workspace.id}`,
      intent: "rename",
      details: { ...r },
    }),
  );
  return c.json(result, 200);
});

export const workspaceRouter = route.router;
