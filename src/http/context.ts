import type { Caller } from "../auth/caller";
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
  };
};
