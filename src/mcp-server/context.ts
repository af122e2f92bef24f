import type { Context } from "hono";
import type { AuditEventInput, AuditEventOf } from "../audit/events";
import type { Caller } from "../auth/caller";
import { type TurnContext, turnContext } from "../conversations/turns";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { baseUrl } from "../platform/env";

/** Everything the tools of one request need: the caller, the turn context, and the route's events. */
export type ToolContext = {
  env: Env;
  caller: Caller;
  origin: string;
  turn: TurnContext;
  /** The route's event, written in the same batch as the change it describes. */
  event: (input: AuditEventOf) => AuditEventInput;
};

export const toolContext = (c: Context<AppEnv>): ToolContext => {
  const caller = c.var.caller;
  const origin = baseUrl(c.env, c.req.url);
  return {
    env: c.env,
    caller,
    origin,
    event: (input) => callerEvent(c, input),
    turn: turnContext(c),
  };
};
