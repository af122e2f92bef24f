import type { Context } from "hono";
import { html } from "hono/html";
import { callerEvent } from "../http/audit";
import { type AppEnv, requestOrigin } from "../http/context";
import { createRouter } from "../http/route";
import { PAGE_HEADERS } from "../platform/pages";
import { ApiError } from "../platform/problem";
import { completeInstall, redeemState, type StateFailure } from "./install";
import { slackConfig } from "./service";
import { SlackError } from "./slack";

/** Where Slack sends the admin back after the install: a browser page, not part of the JSON API document. */
export const installCallbackRouter = createRouter();

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

installCallbackRouter.get("/v1/integrations/slack/callback", async (c) => {
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
    await completeInstall(c.env, requestOrigin(c), redeemed.state, q.code, (install) =>
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
