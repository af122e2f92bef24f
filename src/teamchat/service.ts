/**
 * A workspace's Slack install once made: the app's credentials, the install row and its live bot
 * token, retiring it (ours, Slack's uninstall, a team leaving), and direct messages from the bot.
 */
import { and, eq, lt, type SQL, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { slackInstalls, slackStateUses, users } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { ApiError, badRequest } from "../platform/problem";
import { open } from "../platform/secret-box";
import { SlackError, slackCall } from "./slack";

export type Install = typeof slackInstalls.$inferSelect;

export type SlackConfig = { clientId: string; clientSecret: string; signingSecret: string };

/** The team-chat app's credentials, or 503 `team_chat_not_configured`. */
export function slackConfig(env: Env): SlackConfig {
  if (!env.SLACK_CLIENT_ID || !env.SLACK_CLIENT_SECRET || !env.SLACK_SIGNING_SECRET)
    throw new ApiError(
      503,
      "team_chat_not_configured",
      "Team chat is not configured (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_SIGNING_SECRET)",
    );
  return {
    clientId: env.SLACK_CLIENT_ID,
    clientSecret: env.SLACK_CLIENT_SECRET,
    signingSecret: env.SLACK_SIGNING_SECRET,
  };
}

export async function findInstall(env: Env, workspaceId: string): Promise<Install | null> {
  return (await db(env).select().from(slackInstalls).where(eq(slackInstalls.workspaceId, workspaceId)).get()) ?? null;
}

export const liveToken = async (env: Env, install: Install | null): Promise<string | null> => {
  if (!install?.live || !install.botTokenSealed) return null;
  return open(env, install.botTokenSealed, `slack:${install.workspaceId}`).catch(() => null);
};

const liveInstall = eq(slackInstalls.live, true);

/** Marks the live installs `which` selects not live and forgets their tokens; answers their workspaces. */
const retireLive = (env: Env, which: SQL) =>
  db(env)
    .update(slackInstalls)
    .set({ live: false, botTokenSealed: null, updatedAt: nowIso() })
    .where(and(which, liveInstall))
    .returning({ workspaceId: slackInstalls.workspaceId });

/** Marks an install not live and forgets its token (ours or Slack's uninstall). Answers whether it was live. */
export async function retireInstall(env: Env, workspaceId: string, event?: AuditEventInput): Promise<boolean> {
  const [rows] = await db(env).batch([
    retireLive(env, eq(slackInstalls.workspaceId, workspaceId)),
    ...(event ? [auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })] : []),
  ]);
  return rows.length > 0;
}

/** Uninstalls: revokes the bot token at Slack (best effort) and retires the install. */
export async function uninstall(
  env: Env,
  workspaceId: string,
  event: (done: { teamId: string; revoked: boolean }) => AuditEventInput,
): Promise<{ teamId: string; revoked: boolean; changed: boolean } | null> {
  const install = await findInstall(env, workspaceId);
  if (!install) return null;
  const token = await liveToken(env, install);
  let revoked = false;
  if (token)
    revoked = await slackCall(env, "auth.revoke", {}, token).then(
      () => true,
      () => false,
    );
  const changed = await retireInstall(env, workspaceId, event({ teamId: install.teamId, revoked }));
  return { teamId: install.teamId, revoked, changed };
}

/**
 * Slack told us (webhook) the app left a team: every install of that team stops being live,
 * each workspace's `event` (its workspace filled in SQL) written in the same batch.
 */
export async function retireTeam(env: Env, teamId: string, event: AuditEventInput): Promise<string[]> {
  const team = eq(slackInstalls.teamId, teamId);
  const [, retired] = await db(env).batch([
    auditInBatch(env, event, {
      from: {
        source: sql`FROM ${slackInstalls} WHERE ${and(team, liveInstall)}`,
        workspaceId: sql`${slackInstalls.workspaceId}`,
        idSuffix: sql`${slackInstalls.workspaceId}`,
      },
    }),
    retireLive(env, team),
  ]);
  return retired.map((r) => r.workspaceId);
}

/** Forgets redeemed states once they could not be presented anyway. */
export async function pruneStates(env: Env, now = Date.now()): Promise<void> {
  await db(env)
    .delete(slackStateUses)
    .where(lt(slackStateUses.expiresAt, new Date(now).toISOString()))
    .run();
}

export const notInstalled = (detail = "Team chat is not installed for this workspace") =>
  badRequest("team_chat_not_installed", detail);

/**
 * A direct message from the workspace's bot to one of its members, found in Slack by their
 * email. Best effort: false when no live install, no such Slack account or Slack refuses.
 */
export async function messageMember(env: Env, workspaceId: string, userId: string, text: string): Promise<boolean> {
  const install = await findInstall(env, workspaceId);
  const token = await liveToken(env, install);
  if (!token) return false;
  const user = await db(env).select({ email: users.email }).from(users).where(eq(users.id, userId)).get();
  if (!user?.email) return false;
  try {
    const found = await slackCall<{ user: { id: string } }>(env, "users.lookupByEmail", { email: user.email }, token);
    await slackCall(env, "chat.postMessage", { channel: found.user.id, text }, token);
    return true;
  } catch (e) {
    if (e instanceof SlackError) return false;
    throw e;
  }
}
