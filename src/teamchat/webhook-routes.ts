import { z } from "@hono/zod-openapi";
import type { AuditEventInput } from "../audit/events";
import { routesOf } from "../http/endpoint";
import { MiB } from "../http/route";
import { badRequest } from "../platform/problem";
import { notConfigured, SlackWebhookAckSchema, SlackWebhookHeadersSchema } from "./schemas";
import { retireTeam, slackConfig } from "./service";
import { verifySlackSignature } from "./signature";

const route = routesOf(["Team chat"]);

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

route(
  "public",
  "POST /v1/webhooks/slack",
  "Slack Events API webhook",
  {
    description:
      "Slack's events, authenticated by `X-Slack-Signature` over `v0:<timestamp>:<raw body>` with the signing secret; a timestamp more than 5 minutes away is refused (replay window). Answers `url_verification` with its challenge; `app_uninstalled` and `tokens_revoked` mark the team's install not live; other events are acknowledged.",
    request: { headers: SlackWebhookHeadersSchema },
    responses: {
      200: [SlackWebhookAckSchema, "Processed or ignored"],
      400: "Missing or invalid signature (`invalid_signature`), stale timestamp (`stale_request`)",
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

/** Slack's Events API webhook: URL verification, and an install's end when Slack says so. */
export const webhookRouter = route.router;
