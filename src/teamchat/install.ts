/**
 * Installing the Slack app: the authorize URL with a signed state, the state's single-use
 * redemption, and the code exchange that stores the bot token sealed.
 */
import { eq } from "drizzle-orm";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { slackInstalls, slackStateUses, users } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { seal } from "../platform/secret-box";
import { workspaceRowWhere } from "../platform/workspace-rows";
import { type Install, slackConfig } from "./service";
import { SLACK_SCOPES, SlackError, slackAuthorizeUrl, slackCall } from "./slack";
import { type InstallState, signState, verifyState } from "./state";

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
