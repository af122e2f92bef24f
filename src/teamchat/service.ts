import { and, eq, lt, type SQL, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { slackInstalls, slackStateUses, users } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { ApiError, badRequest } from "../platform/problem";
import { open, seal } from "../platform/secret-box";
import { workspaceRowWhere } from "../platform/workspace-rows";
import { SLACK_SCOPES, SlackError, slackAuthorizeUrl, slackCall } from "./slack";
import { type InstallState, signState, verifyState } from "./state";

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

export const callbackUrl = (origin: string) => `${origin}/v1/integrations/slack/callback`;

/** Slack's authorize URL for this workspace's admin, with a signed 10-minute state. */
export async function installUrl(env: Env, origin: string, workspaceId: string, userId: string): Promise<string> {
  const config = slackConfig(env);
  const url = new URL(slackAuthorizeUrl(env));
  url.searchParams.set("client_id", config.clientId);
  url.searchParams.set("scope", SLACK_SCOPES.join(","));
  url.searchParams.set("redirect_uri", callbackUrl(origin));
  url.searchParams.set("state", await signState(config.clientSecret, workspaceId, userId));
  return url.toString();
}

export type StateFailure = "invalid" | "expired" | "reused" | "not_admin";

/**
 * Checks a returned state and redeems it: signed by us, not expired, never used before (a
 * conditional insert of its nonce decides races), and its user still an admin of its workspace.
 */
export async function redeemState(
  env: Env,
  state: string,
  now = Date.now(),
): Promise<{ ok: true; state: InstallState } | { ok: false; reason: StateFailure; state?: InstallState }> {
  const config = slackConfig(env);
  const verdict = await verifyState(config.clientSecret, state, now);
  if (!verdict.ok) return verdict;
  const used = await db(env)
    .insert(slackStateUses)
    .values({ nonce: verdict.state.nonce, expiresAt: new Date(verdict.state.expiresAt).toISOString() })
    .onConflictDoNothing()
    .returning({ nonce: slackStateUses.nonce })
    .get();
  if (!used) return { ok: false, reason: "reused", state: verdict.state };
  const user = await db(env)
    .select({ role: users.role, erasedAt: users.erasedAt })
    .from(users)
    .where(workspaceRowWhere(users, verdict.state.workspaceId, verdict.state.userId))
    .get();
  if (!user || user.erasedAt || user.role !== "admin") return { ok: false, reason: "not_admin", state: verdict.state };
  return verdict;
}

type OAuthAccess = {
  access_token?: string;
  token_type?: string;
  scope?: string;
  bot_user_id?: string;
  team?: { id?: string; name?: string } | null;
};

/** Exchanges the code with `oauth.v2.access` and stores the bot token sealed; returns the install. */
export async function completeInstall(
  env: Env,
  origin: string,
  state: InstallState,
  code: string,
  event: (install: { teamId: string; botUserId: string | null; scopes: string; reinstall: boolean }) => AuditEventInput,
): Promise<{ install: Install; reinstall: boolean }> {
  const config = slackConfig(env);
  const access = await slackCall<OAuthAccess>(env, "oauth.v2.access", {
    client_id: config.clientId,
    client_secret: config.clientSecret,
    code,
    redirect_uri: callbackUrl(origin),
  });
  const token = access.access_token;
  const teamId = access.team?.id;
  if (!token || !teamId) throw new SlackError("no_bot_token");
  const sealed = await seal(env, token, `slack:${state.workspaceId}`);
  const now = nowIso();
  const previous = await db(env)
    .select({ live: slackInstalls.live })
    .from(slackInstalls)
    .where(eq(slackInstalls.workspaceId, state.workspaceId))
    .get();
  const values = {
    teamId,
    teamName: access.team?.name ?? null,
    botUserId: access.bot_user_id ?? null,
    botTokenSealed: sealed,
    scopes: access.scope ?? "",
    installedBy: state.userId,
    installedAt: now,
    live: true,
    updatedAt: now,
  };
  const d = db(env);
  const [[install]] = await d.batch([
    d
      .insert(slackInstalls)
      .values({ workspaceId: state.workspaceId, ...values })
      .onConflictDoUpdate({ target: slackInstalls.workspaceId, set: values })
      .returning(),
    auditInBatch(env, event({ ...values, reinstall: !!previous })),
  ]);
  return { install: install!, reinstall: !!previous };
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
