import { z } from "@hono/zod-openapi";
import { headerParam } from "../http/params";
import { problemResponse } from "../platform/problem";

export const SlackStatusSchema = z
  .object({
    installed: z.boolean().openapi({ description: "A live install: its token works as far as the service knows" }),
    team_id: z.string().nullable(),
    team_name: z.string().nullable(),
    bot_user_id: z.string().nullable(),
    installed_at: z.string().nullable(),
  })
  .strict()
  .openapi("SlackStatus");

export const InstallUrlSchema = z
  .object({ url: z.url().openapi({ description: "Slack's authorize page; valid for 10 minutes, once" }) })
  .strict()
  .openapi("SlackInstallUrl");

export const DeliverRequestSchema = z
  .object({
    channel_id: z
      .string()
      .regex(/^[A-Z0-9]{2,40}$/, "a Slack channel id such as C0123ABCD")
      .openapi({ example: "C0123ABCD", description: "A channel the service's bot belongs to" }),
    message: z.string().max(3000).optional().openapi({ description: "Posted with the file; the caption otherwise" }),
  })
  .strict()
  .openapi("DeliverRequest");

export const DeliveredSchema = z
  .object({ delivered: z.literal(true), channel_id: z.string(), file_id: z.string() })
  .strict()
  .openapi("Delivered");

export const SlackWebhookHeadersSchema = z.object({
  "x-slack-signature": headerParam("x-slack-signature", 200, "`v0=` HMAC-SHA256 of the request"),
  "x-slack-request-timestamp": headerParam("x-slack-request-timestamp", 20, "Unix seconds"),
});

export const SlackWebhookAckSchema = z
  .object({
    ok: z.literal(true),
    challenge: z.string().optional().openapi({ description: "Echoed for `url_verification`" }),
  })
  .strict()
  .openapi("SlackWebhookAck");

/** The 503 of a route that needs the Slack app (and the encryption key) configured. */
export const notConfigured = problemResponse(
  "Team chat is not configured (`team_chat_not_configured`), or no encryption key (`encryption_not_configured`)",
);
