import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { html } from "hono/html";
import { type AuditEventInput, auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { createRouter, jsonBody, jsonResponse, MiB } from "../http/route";
import { baseUrl } from "../platform/env";
import { PAGE_HEADERS } from "../platform/pages";
import { ApiError, badRequest, problemResponse } from "../platform/problem";
import { sealingAvailable } from "../platform/secret-box";
import {
  DeliveredSchema,
  DeliverRequestSchema,
  InstallUrlSchema,
  SlackStatusSchema,
  SlackWebhookAckSchema,
  SlackWebhookHeadersSchema,
} from "./schemas";
import {
  completeInstall,
  deliverArtifact,
  findInstall,
  installUrl,
  redeemState,
  retireTeam,
  type StateFailure,
  slackConfig,
  uninstall,
} from "./service";
import { verifySlackSignature } from "./signature";
import { SlackError } from "./slack";

export const teamchatRouter = createRouter();

/** The part of a Slack Events API body the service reads. */
const SlackEventSchema = z.object({
  type: z.string().max(100),
  challenge: z.string().max(200).optional(),
  team_id: z.string().max(40).optional(),
  event: z
    .object({
      type: z.string().max(100).optional(),
      tokens: z.object({ bot: z.array(z.string()).optional() }).optional(),
    })
    .optional(),
});

const route = routesOf(teamchatRouter, ["Team chat"]);
const origin = (c: Context<AppEnv>) => baseUrl(c.env, c.req.url);
const notConfigured = problemResponse(
  "Team chat is not configured (`team_chat_not_configured`), or no encryption key (`encryption_not_configured`)",
);

route("admin", "GET /v1/api/integrations/slack", "Team-chat install status", {
  description: "Whether the workspace has a live Slack install, and which team and bot it is.",
  responses: { 200: jsonResponse(SlackStatusSchema, "The install, or `installed: false` with nulls") },
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
  responses: { 200: jsonResponse(InstallUrlSchema, "Where to send the admin"), 503: notConfigured },
}).handle(async (c) => {
  slackConfig(c.env);
  if (!(await sealingAvailable(c.env)))
    throw new ApiError(503, "encryption_not_configured", "ENCRYPTION_KEY is not configured");
  const caller = c.var.caller;
  return c.json({ url: await installUrl(c.env, origin(c), caller.workspace.id, caller.userId) }, 200);
});

route("admin", "DELETE /v1/api/integrations/slack", "Uninstall team chat", {
  description: "Revokes the bot token at Slack (best effort) and forgets it. Idempotent.",
  responses: { 204: { description: "Uninstalled (or nothing was installed)" } },
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

route(
  { scope: "conversations:read" },
  "POST /v1/api/artifacts/{id}/deliver",
  "Deliver an artifact into a team-chat channel",
  {
    description:
      "Uploads the artifact (streamed from storage) into a Slack channel the service's bot belongs to, with a comment naming the conversation's agent and “shared from studio by <user>”. The caller must see the artifact in one of their conversations. 400 `team_chat_not_installed` (no live install), `bot_not_in_channel`, `not_deliverable` (sensitive, over 1 GiB, empty, or no longer in a conversation).",
    request: {
      params: z
        .object({ id: z.uuid().openapi({ param: { name: "id", in: "path" }, description: "The artifact id" }) })
        .strict(),
      body: jsonBody(DeliverRequestSchema),
    },
    responses: {
      200: jsonResponse(DeliveredSchema, "Posted in the channel"),
      400: problemResponse("Validation, `team_chat_not_installed`, `bot_not_in_channel` or `not_deliverable`"),
      404: problemResponse("No such artifact, or one the caller may not see"),
      502: problemResponse("Slack refused or failed the upload for another reason (`team_chat_failed`)"),
    },
  },
).handle(async (c) => {
  const { id } = c.req.valid("param");
  const { channel_id, message } = c.req.valid("json");
  const caller = c.var.caller;
  const delivery = await deliverArtifact(
    c.env,
    { workspaceId: caller.workspace.id, userId: caller.userId, userName: caller.name || "a member" },
    id,
    channel_id,
    message,
  ).catch(async (e: unknown) => {
    if (e instanceof ApiError && e.code === "bot_not_in_channel")
      await auditAlone(
        c.env,
        callerEvent(c, {
          kind: "teamchat.deliver",
          outcome: "error",
          target: `artifact:${id}`,
          intent: "deliver",
          details: { channel_id, slack_error: e.code },
        }),
      );
    throw e;
  });
  await auditAlone(
    c.env,
    callerEvent(c, {
      kind: "teamchat.deliver",
      target: `artifact:${id}`,
      intent: "deliver",
      conversationId: delivery.conversationId,
      details: { channel_id: delivery.channelId, file_id: delivery.fileId, size: delivery.size },
    }),
  );
  return c.json({ delivered: true as const, channel_id: delivery.channelId, file_id: delivery.fileId }, 200);
});

route(
  "public",
  "POST /v1/webhooks/slack",
  "Slack Events API webhook",
  {
    description:
      "Slack's events, authenticated by `X-Slack-Signature` over `v0:<timestamp>:<raw body>` with the signing secret; a timestamp more than 5 minutes away is refused (replay window). Answers `url_verification` with its challenge; `app_uninstalled` and `tokens_revoked` mark the team's install not live; other events are acknowledged.",
    request: { headers: SlackWebhookHeadersSchema },
    responses: {
      200: jsonResponse(SlackWebhookAckSchema, "Processed or ignored"),
      400: problemResponse("Missing or invalid signature (`invalid_signature`), stale timestamp (`stale_request`)"),
      503: notConfigured,
    },
  },
  { maxBodyBytes: MiB },
).handle(async (c) => {
  const config = slackConfig(c.env);
  const raw = await c.req.text();
  const headers = c.req.valid("header");
  const verdict = await verifySlackSignature(
    config.signingSecret,
    headers["x-slack-request-timestamp"],
    headers["x-slack-signature"],
    raw,
  );
  if (verdict === "stale") throw badRequest("stale_request", "The request timestamp is outside the 5-minute window");
  if (verdict !== "ok") throw badRequest("invalid_signature", "The Slack signature is missing or does not match");
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest("invalid_json", "The body is not JSON");
  }
  const body = SlackEventSchema.safeParse(parsed);
  if (!body.success) throw badRequest("invalid_event", "The body is not a Slack event");
  const { type, challenge, team_id: teamId, event } = body.data;
  if (type === "url_verification" && challenge !== undefined) return c.json({ ok: true as const, challenge }, 200);
  const cause = event?.type;
  const retired = cause === "app_uninstalled" || (cause === "tokens_revoked" && (event?.tokens?.bot?.length ?? 0) > 0);
  if (type === "event_callback" && teamId && retired) {
    const event: AuditEventInput = {
      workspaceId: "",
      actor: { kind: "system", id: null },
      kind: "teamchat.uninstall",
      target: `slack_team:${teamId}`,
      intent: cause,
      details: { team_id: teamId, cause },
    };
    await retireTeam(c.env, teamId, event);
  }
  return c.json({ ok: true as const }, 200);
});

// ---- The install callback: a browser page, not part of the JSON API document ----

const FAILURES: Record<StateFailure | "denied" | "slack", string> = {
  invalid: "This install link is not valid.",
  expired: "This install link has expired. Start the install again.",
  reused: "This install link was already used. Start the install again.",
  not_admin: "Only a workspace admin can install team chat.",
  denied: "The install was cancelled in Slack.",
  slack: "Slack did not complete the install. Start it again.",
};

function page(c: Context<AppEnv>, status: 200 | 400 | 503, title: string, text: string) {
  return c.html(
    html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;background:#f5f6f8}main{max-width:420px;margin:10vh auto;background:#fff;padding:2rem;border-radius:12px}</style>
</head><body><main><h1>${title}</h1><p>${text}</p></main></body></html>`,
    status,
    PAGE_HEADERS,
  );
}

teamchatRouter.get("/v1/integrations/slack/callback", async (c) => {
  const q = c.req.query();
  const state = typeof q.state === "string" ? q.state : "";
  try {
    slackConfig(c.env);
  } catch {
    return page(c, 503, "Team chat is not configured", "Ask the operator to configure the Slack app.");
  }
  const redeemed = await redeemState(c.env, state);
  if (!redeemed.ok) return page(c, 400, "Install failed", FAILURES[redeemed.reason]);
  if (q.error || !q.code || q.code.length > 512) return page(c, 400, "Install cancelled", FAILURES.denied);
  try {
    await completeInstall(c.env, origin(c), redeemed.state, q.code, (install) =>
      callerEvent(c, {
        workspaceId: redeemed.state.workspaceId,
        actor: { kind: "user", id: redeemed.state.userId },
        kind: "teamchat.install",
        target: `slack_team:${install.teamId}`,
        intent: "install",
        details: {
          team_id: install.teamId,
          bot_user_id: install.botUserId,
          scopes: install.scopes,
          reinstall: install.reinstall,
        },
      }),
    );
    return page(c, 200, "Team chat connected", `Slack is connected to this workspace. You can close this tab.`);
  } catch (e) {
    if (e instanceof SlackError) return page(c, 400, "Install failed", FAILURES.slack);
    if (e instanceof ApiError && e.status === 503) return page(c, 503, "Install failed", e.message);
    throw e;
  }
});
