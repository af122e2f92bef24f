import { auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { idPathParams } from "../http/params";
import { jsonBody } from "../http/route";
import { ApiError } from "../platform/problem";
import { deliverArtifact } from "./delivery";
import { DeliveredSchema, DeliverRequestSchema } from "./schemas";

const route = routesOf(["Team chat"]);

route(
  { scope: "conversations:read" },
  "POST /v1/api/artifacts/{id}/deliver",
  "Deliver an artifact into a team-chat channel",
  {
    description:
      "Uploads the artifact (streamed from storage) into a Slack channel the service's bot belongs to, with a comment naming the conversation's agent and “shared from studio by <user>”. The caller must see the artifact in one of their conversations. 400 `team_chat_not_installed` (no live install), `bot_not_in_channel`, `not_deliverable` (sensitive, over 1 GiB, empty, or no longer in a conversation).",
    request: {
      params: idPathParams("The artifact id"),
      body: jsonBody(DeliverRequestSchema),
    },
    responses: {
      200: [DeliveredSchema, "Posted in the channel"],
      400: "Validation, `team_chat_not_installed`, `bot_not_in_channel` or `not_deliverable`",
      404: "No such artifact, or one the caller may not see",
      502: "Slack refused or failed the upload for another reason (`team_chat_failed`)",
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

/** Delivering an artifact into a Slack channel of the workspace's install. */
export const deliverRouter = route.router;
