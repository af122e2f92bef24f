import { callerEvent } from "../http/audit";
import { requestOrigin } from "../http/context";
import { routesOf } from "../http/endpoint";
import { ApiError } from "../platform/problem";
import { sealingAvailable } from "../platform/secret-box";
import { installCallbackRouter } from "./callback-routes";
import { deliverRouter } from "./deliver-routes";
import { installUrl } from "./install";
import { InstallUrlSchema, notConfigured, SlackStatusSchema } from "./schemas";
import { findInstall, slackConfig, uninstall } from "./service";
import { webhookRouter } from "./webhook-routes";

const route = routesOf(["Team chat"]);

route("admin", "GET /v1/api/integrations/slack", "Team-chat install status", {
  description: "Whether the workspace has a live Slack install, and which team and bot it is.",
  responses: { 200: [SlackStatusSchema, "The install, or `installed: false` with nulls"] },
}).handle(async (c) => {
  const install = await findInstall(c.env, c.var.caller.workspace.id);
  const live = !!install?.live;
  return c.json(
    {
      installed: live,
      team_id: live ? install!.teamId : null,
      team_name: live ? install!.teamName : null,
      bot_user_id: live ? install!.botUserId : null,
      installed_at: live ? install!.installedAt : null,
    },
    200,
  );
});

route("admin", "POST /v1/api/integrations/slack/install", "Start the Slack install", {
  description:
    "Answers Slack's v2 authorize URL (scopes `files:write`, `chat:write`, `chat:write.customize`) with a signed `state` bound to this workspace and admin, valid once for 10 minutes. Slack sends the admin back to `GET /v1/integrations/slack/callback`, which stores the bot token encrypted and shows a small page.",
  responses: { 200: [InstallUrlSchema, "Where to send the admin"], 503: notConfigured },
}).handle(async (c) => {
  slackConfig(c.env);
  if (!(await sealingAvailable(c.env)))
    throw new ApiError(503, "encryption_not_configured", "ENCRYPTION_KEY is not configured");
  const caller = c.var.caller;
  return c.json({ url: await installUrl(c.env, requestOrigin(c), caller.workspace.id, caller.userId) }, 200);
});

route("admin", "DELETE /v1/api/integrations/slack", "Uninstall team chat", {
  description: "Revokes the bot token at Slack (best effort) and forgets it. Idempotent.",
  responses: { 204: "Uninstalled (or nothing was installed)" },
}).handle(async (c) => {
  await uninstall(c.env, c.var.caller.workspace.id, ({ teamId, revoked }) =>
    callerEvent(c, {
      kind: "teamchat.uninstall",
      target: `slack_team:${teamId}`,
      intent: "uninstall",
      details: { team_id: teamId, cause: "admin", revoked },
    }),
  );
  return c.body(null, 204);
});

/** Team chat: a workspace admin's Slack install (its status, starting it, uninstalling). */
export const teamchatRouter = route.router
  .route("/", deliverRouter)
  .route("/", webhookRouter)
  .route("/", installCallbackRouter);
