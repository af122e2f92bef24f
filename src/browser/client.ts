/**
 * The BrowserSession object of a user; the only place that names browser objects. Always
 * addressed by the verified user id, never by anything the client sends.
 */
export function browserSession(env: Env, userId: string) {
  return env.BROWSER_SESSION.getByName(userId);
}
