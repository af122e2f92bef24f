/** Delivering an artifact into a Slack channel, posted as the conversation's agent. */
import { eq } from "drizzle-orm";
import { findVisibleArtifact } from "../artifacts/service";
import { artifactKey } from "../artifacts/store";
import { agents, conversations } from "../db/schema";
import { db } from "../platform/db";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { workspaceRowWhere } from "../platform/workspace-rows";
import { findInstall, liveToken, notInstalled, retireInstall } from "./service";
import { DEAD_TOKEN_ERRORS, SlackError, slackCall, uploadBytes } from "./slack";

/** Files over this size are not delivered (Slack's own limit). */
export const DELIVER_MAX_BYTES = 1024 * 1024 * 1024;

export type Delivery = { channelId: string; fileId: string; size: number; conversationId: string };

type Caller = { workspaceId: string; userId: string; userName: string };

/** The artifact, when the caller sees it and it may go to team chat (in a conversation, not sensitive, 1 B–1 GiB). */
async function deliverableArtifact(env: Env, caller: Caller, artifactId: string) {
  const artifact = await findVisibleArtifact(env, caller.workspaceId, caller.userId, artifactId);
  if (!artifact) throw notFound("No such artifact");
  const { conversationId } = artifact;
  if (!conversationId)
    throw badRequest("not_deliverable", "The artifact is no longer in a conversation, so no agent can post it");
  if (artifact.sensitive) throw badRequest("not_deliverable", "Sensitive artifacts are never shared to team chat");
  if (artifact.size > DELIVER_MAX_BYTES) throw badRequest("not_deliverable", "The artifact is larger than 1 GiB");
  if (artifact.size === 0) throw badRequest("not_deliverable", "The artifact is empty");
  return { ...artifact, conversationId };
}

/** The live install's bot token, or 400 `team_chat_not_installed`. */
async function botToken(env: Env, workspaceId: string): Promise<string> {
  const install = await findInstall(env, workspaceId);
  if (!install?.live) throw notInstalled();
  const token = await liveToken(env, install);
  if (!token) throw notInstalled("The stored team-chat credentials cannot be used; install team chat again");
  return token;
}

/** The agent the post is signed with: the one that made the artifact, else the conversation's. */
async function posterName(
  env: Env,
  workspaceId: string,
  artifact: { conversationId: string; agentId: string | null },
): Promise<string | undefined> {
  const agent = await db(env)
    .select({ name: agents.displayName })
    .from(conversations)
    .innerJoin(agents, eq(agents.id, conversations.agentId))
    .where(workspaceRowWhere(conversations, workspaceId, artifact.conversationId))
    .get();
  return artifact.agentId
    ? ((await db(env).select({ name: agents.displayName }).from(agents).where(eq(agents.id, artifact.agentId)).get())
        ?.name ?? agent?.name)
    : agent?.name;
}

/** Slack's refusal as our problem; a dead token retires the install first. */
function slackRefusal(env: Env, workspaceId: string) {
  return async (e: unknown): Promise<never> => {
    if (!(e instanceof SlackError)) throw e;
    if (e.error === "not_in_channel" || e.error === "channel_not_found")
      throw badRequest("bot_not_in_channel", "The service's bot is not a member of that channel; invite it first");
    if (DEAD_TOKEN_ERRORS.has(e.error)) {
      await retireInstall(env, workspaceId);
      throw notInstalled("Slack no longer accepts this workspace's install; install team chat again");
    }
    throw new ApiError(502, "team_chat_failed", `Slack refused the delivery (${e.error})`);
  };
}

/**
 * Delivers an artifact into a Slack channel as the conversation's agent: the three calls of
 * Slack's external upload (`files.getUploadURLExternal`, the bytes streamed from R2 to the
 * upload URL, `files.completeUploadExternal` with the initial comment).
 */
export async function deliverArtifact(
  env: Env,
  caller: Caller,
  artifactId: string,
  channelId: string,
  message: string | undefined,
): Promise<Delivery> {
  const artifact = await deliverableArtifact(env, caller, artifactId);
  const token = await botToken(env, caller.workspaceId);
  const agentName = await posterName(env, caller.workspaceId, artifact);
  const onSlackError = slackRefusal(env, caller.workspaceId);

  const upload = await slackCall<{ upload_url: string; file_id: string }>(
    env,
    "files.getUploadURLExternal",
    { filename: artifact.name, length: String(artifact.size) },
    token,
  ).catch(onSlackError);
  const object = await env.FILES.get(artifactKey(artifact.workspaceId, artifact.id));
  if (!object) throw notFound("No such artifact");
  await uploadBytes(env, upload.upload_url, object.body, object.size).catch(onSlackError);
  const lead = message?.trim() ? message.trim() : artifact.caption || artifact.name;
  await slackCall(
    env,
    "files.completeUploadExternal",
    {
      files: JSON.stringify([{ id: upload.file_id, title: artifact.name }]),
      channel_id: channelId,
      initial_comment: `*${agentName ?? "Agent"}*: ${lead}\n_shared from studio by ${caller.userName}_`,
    },
    token,
  ).catch(onSlackError);
  return { channelId, fileId: upload.file_id, size: artifact.size, conversationId: artifact.conversationId };
}
