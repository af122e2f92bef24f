import type { Hono } from "hono";
import { type BearerKind, PAT_KIND } from "../auth/resolve";
import type { ToolProvider } from "../platform/turn-tools";
import type { AppEnv } from "./context";
import type { LazyRoutes } from "./lazy-routes";
import type { AreaRegistry, CronJob, EraseStep, InboundEmail, QueueConsumer } from "./registry";

/**
 * An area of the service, as `app.ts` and `index.ts` plug it in. Each area folder exports
 * exactly one of these from its `index.ts`; no area registers anything by being imported.
 */
export type Area = {
  name: string;
  /** Its HTTP routes, mounted at the root. */
  router?: Hono<AppEnv>;
  /** Or its HTTP routes loaded on the first request to them (see `LazyRoutes`). */
  routes?: LazyRoutes;
  /** Run when a user is erased, in the order of the area list. */
  eraseStep?: EraseStep;
  /** A bearer-token kind the area issues, recognized by its prefix. */
  bearerKind?: BearerKind;
  crons?: readonly CronJob[];
  queues?: Readonly<Record<string, QueueConsumer>>;
  /** Tools the area offers an agent's turn (skills, memory, files, ...). */
  tools?: ToolProvider;
  /** Inbound email, from the Worker's `email` handler. */
  email?: InboundEmail;
};

export function registryOf(areas: readonly Area[]): AreaRegistry {
  const queues = new Map<string, QueueConsumer>();
  for (const area of areas) {
    for (const [name, consumer] of Object.entries(area.queues ?? {})) {
      if (queues.has(name)) throw new Error(`queue ${name} has two consumers`);
      queues.set(name, consumer);
    }
  }
  return {
    eraseSteps: areas.flatMap((a) => (a.eraseStep ? [{ area: a.name, step: a.eraseStep }] : [])),
    bearerKinds: [PAT_KIND, ...areas.flatMap((a) => (a.bearerKind ? [a.bearerKind] : []))],
    crons: areas.flatMap((a) => a.crons ?? []),
    queues,
    tools: areas.flatMap((a) => (a.tools ? [a.tools] : [])),
    email: oneEmailHandler(areas),
  };
}

function oneEmailHandler(areas: readonly Area[]): InboundEmail | null {
  const handlers = areas.filter((a) => a.email);
  if (handlers.length > 1) throw new Error(`inbound email has two handlers: ${handlers.map((a) => a.name).join(", ")}`);
  return handlers[0]?.email ?? null;
}
