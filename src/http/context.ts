import type { Context } from "hono";
import type { Caller } from "../auth/caller";
import type { Along } from "../auth/resolve";
import { baseUrl } from "../platform/env";
import type { AreaRegistry } from "./registry";

/** The Hono environment of every route: the Worker's bindings and what middleware sets per request. */
export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** Set by the auth guard on every authenticated route. */
    caller: Caller;
    /** What the areas plugged into the app contribute (erasure steps, bearer kinds, ...). */
    areas: AreaRegistry;
    /** A route's first read, made in the credential check's D1 batch (see `prefetched`). */
    along?: Along;
  };
};

/** The service's own origin, as a request to it sees it (`BASE_URL` when configured). */
export const requestOrigin = (c: Context<AppEnv>) => baseUrl(c.env, c.req.url);
