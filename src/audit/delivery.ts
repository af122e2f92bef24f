import { AsyncLocalStorage } from "node:async_hooks";
import { logError } from "../platform/log";
import { deliverOutbox, deliverWorkspace, removeDelivered, type Unremoved } from "./outbox";

/**
 * Delivery of audit events into the workspaces' chains, without any call site asking: every
 * entry point (a request, a queue batch, a cron run, a mail, an object's handler) runs inside
 * `deliveringAudit`, the two verbs mark the workspaces whose outbox they wrote to, and once the
 * work is done (the response is on its way) those workspaces' rows are delivered in the
 * background. Rows are durable before that: a delivery that fails is retried by the cron.
 */
type Scope = {
  env: Env;
  waitUntil: (promise: Promise<unknown>) => void;
  workspaces: Set<string>;
  /** An event whose workspace only the database knew: deliver whatever waits. */
  sweep: boolean;
  /** The work is done: a mark made later (a stream still running) is delivered at once. */
  closed: boolean;
};

const scopes = new AsyncLocalStorage<Scope>();

type WaitUntil = { waitUntil(promise: Promise<unknown>): void };

/** Runs `work` with audit delivery after it: the events it writes are delivered once it is done. */
export async function deliveringAudit<T>(env: Env, ctx: WaitUntil, work: () => Promise<T>): Promise<T> {
  const scope: Scope = {
    env,
    waitUntil: (p) => ctx.waitUntil(p),
    workspaces: new Set(),
    sweep: false,
    closed: false,
  };
  try {
    return await scopes.run(scope, work);
  } finally {
    scope.closed = true;
    for (const workspaceId of scope.workspaces) startDelivery(scope, workspaceId);
    if (scope.sweep) startDelivery(scope, null);
  }
}

/**
 * Marks a workspace (null: not known here) whose outbox an event was written to. Outside any
 * scope (an object's handler, a test calling a service directly) an event already written is
 * delivered at once (the promise to await), and one in a batch is left to the cron.
 */
export function markForDelivery(
  env: Env,
  workspaceId: string | null,
  opts: { now?: boolean } = {},
): Promise<void> | undefined {
  const scope = scopes.getStore();
  if (!scope) return opts.now && workspaceId ? deliverNow(env, workspaceId) : undefined;
  if (scope.closed) startDelivery(scope, workspaceId);
  else if (workspaceId) scope.workspaces.add(workspaceId);
  else scope.sweep = true;
  return undefined;
}

function startDelivery(scope: Scope, workspaceId: string | null) {
  const delivery = deliverAfterCommit(scope.env, workspaceId);
  if (delivery) scope.waitUntil(delivery);
}

/** Moves a workspace's committed outbox rows into its chain; a failure leaves them to the cron. */
export async function deliverNow(env: Env, workspaceId: string, unremoved?: Unremoved): Promise<void> {
  try {
    await deliverWorkspace(env, workspaceId, unremoved);
  } catch (error) {
    logError("audit delivery failed; rows wait in the outbox", error);
  }
}

/** How many workspaces' rows one round of the "workspace unknown" loop delivers. */
const SWEEP_WORKSPACES = 10;
/** Rounds one delivery loop runs before it leaves the rest to the next request (or the cron). */
const LOOP_ROUNDS = 50;
/**
 * How long a round waits before it reads the outbox: rows of the requests committing meanwhile
 * join it, so under load one round (one call, one D1 read and one delete) carries many events.
 */
const ROUND_DELAY_MS = 100;
/**
 * Per isolate: workspaces whose delivery loop is running (null: the loop for events whose
 * workspace only the database knew, which delivers whatever waits), and whether rows were
 * committed since its round began.
 */
const loops = new Map<string | null, { again: boolean }>();

/** No delivery loop of this isolate may still append a workspace's rows (tests that edit a chain by hand wait for this). */
export const deliveryIdle = (workspaceId: string): boolean => !loops.has(workspaceId) && !loops.has(null);

/**
 * Delivery after a commit, shared by the requests of one isolate: the first starts a loop (the
 * promise to hand to `waitUntil`), the others only mark that more rows wait and get null. The
 * loop runs another round while rows keep arriving, so under load one call to the object
 * delivers many requests' events; no request waits on another's promise. A round's delivered
 * rows are removed from the outbox with the next round's read, the last round's when the loop ends.
 */
function deliverAfterCommit(env: Env, workspaceId: string | null): Promise<void> | null {
  const running = loops.get(workspaceId);
  if (running) {
    running.again = true;
    return null;
  }
  const loop = { again: false };
  loops.set(workspaceId, loop);
  const unremoved: Unremoved = { ids: [] };
  return (async () => {
    try {
      for (let round = 0; round < LOOP_ROUNDS; round++) {
        await new Promise((resolve) => setTimeout(resolve, ROUND_DELAY_MS));
        loop.again = false;
        if (workspaceId === null) await deliverOutbox(env, SWEEP_WORKSPACES);
        else await deliverNow(env, workspaceId, unremoved);
        if (!loop.again) return;
      }
    } finally {
      loops.delete(workspaceId);
      await removeDelivered(env, unremoved.ids).catch((error) =>
        logError("delivered audit rows not removed; the next delivery skips them", error),
      );
    }
  })();
}
