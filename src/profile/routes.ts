import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { BusinessProfileSchema, BusinessProfileUpdateSchema } from "./schemas";
import { getProfile, updateProfile } from "./service";

const route = routesOf(["Business profile"]);

route("authenticated", "GET /v1/api/business-profile", "The workspace's business profile", {
  description:
    "What the crawl of the workspace's website found (summary, palette, fonts, logo, technologies, enrichment), with each admin override in place of the discovered value. `overridden_fields` names the overridden fields and `sources` says where and when each discovered value was read. Any member may read it.",
  responses: { 200: [BusinessProfileSchema, "The profile, overrides applied"] },
}).handle(async (c) => c.json(await getProfile(c.env, c.var.caller.workspace.id), 200));

route("admin", "PUT /v1/api/business-profile", "Override profile fields or change the domain", {
  description:
    "Each field sent sets an override, `null` clears it (the discovered value shows again), and a field left out is untouched; overrides survive every refresh. A new domain is normalized (scheme, path, port and a leading `www.` dropped, IDNA to ASCII; IP addresses, single labels and local or reserved names are refused with 400 `invalid_domain`), sets `crawl_status` to `pending` and queues a crawl at once. Returns the profile as GET does.",
  body: BusinessProfileUpdateSchema,
  responses: {
    200: [BusinessProfileSchema, "The refreshed profile"],
    400: "Invalid domain (`invalid_domain`) or an invalid field",
  },
}).handle(async (c) => {
  const workspaceId = c.var.caller.workspace.id;
  const outcome = await updateProfile(c.env, workspaceId, c.req.valid("json"), (change) =>
    callerEvent(c, {
      kind: "profile.update",
      target: `workspace:${workspaceId}`,
      intent: "update",
      details: { fields: change.set, cleared: change.cleared, domain_changed: change.domainChanged },
    }),
  );
  return c.json(outcome.profile, 200);
});

export const profileRouter = route.router;
