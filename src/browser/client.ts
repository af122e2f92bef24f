import type { BrowserSession } from "../../durable-objects/browser-session";

/**
 * The BrowserSession object of a user; the only place that names browser objects. Always
 * addressed by the verified user id, never by anything the client sends.
 */
export function browserSession(env: Env, userId: string): DurableObjectStub<BrowserSession> {
  return env.BROWSER_SESSION.getByName(userId);
}
