import type { MiddlewareHandler } from "hono";
import { RequestSession } from "../platform/db";
import type { AppEnv } from "./context";

/** The header a client sends and receives the D1 bookmark in (read-your-writes across requests). */
export const BOOKMARK_HEADER = "x-d1-bookmark";

/**
 * Runs the request on a D1 session of its own, from the client's bookmark when it sent one, and
 * answers the session's bookmark (every response of a request that used D1). Nothing else in
 * the service handles bookmarks.
 */
export const d1Session: MiddlewareHandler<AppEnv> = (c, next) => {
  const session = new RequestSession(c.req.header(BOOKMARK_HEADER));
  return session.run(async () => {
    await next();
    const bookmark = session.bookmark();
    if (bookmark) c.res.headers.set(BOOKMARK_HEADER, bookmark);
  });
};
