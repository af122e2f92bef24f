import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { auditAlone } from "../audit/events";
import { SESSION_COOKIE } from "../auth/resolve";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { rateLimit } from "../http/rate-limit";
import { limitBody } from "../http/route";
import { SESSION_TTL_SECONDS, signIn, signOut } from "../identity/sessions";
import { crossOriginWrite, csrfToken, csrfValid, PAGE_HEADERS } from "../platform/pages";
import { ApiError } from "../platform/problem";
import { SigninPage } from "./pages";
import { safeReturnTo } from "./service";

/** Browser sign-in pages (HTML, not part of the JSON API document). */
export const signinRouter = new Hono<AppEnv>();

const WRONG_CREDENTIALS = "Incorrect email or password.";

const SigninFormSchema = z.object({
  email: z.string().trim().toLowerCase().max(254),
  password: z.string().max(256),
  return_to: z.string().max(2048).optional(),
  csrf_token: z.string().max(256).optional(),
});

signinRouter.get("/v1/signin", (c) => {
  const returnTo = safeReturnTo(c.req.query("return_to"));
  return c.html(<SigninPage csrfToken={csrfToken(c)} returnTo={returnTo} />, 200, PAGE_HEADERS);
});

/** A session's event: by the user it belongs to, in their workspace. */
const bySessionUser = (user: { workspaceId: string; userId: string }, sessionId: string) => ({
  workspaceId: user.workspaceId,
  actor: { kind: "user" as const, id: user.userId },
  target: `session:${sessionId}`,
  subjectUserId: user.userId,
});

signinRouter.post("/v1/signin", limitBody(), rateLimit("SIGNIN_LIMITER"), async (c) => {
  const form = SigninFormSchema.safeParse(await c.req.parseBody().catch(() => ({})));
  const returnTo = safeReturnTo(form.success ? form.data.return_to : undefined);
  const render = (status: 400 | 401 | 403, error: string, email?: string) =>
    c.html(
      <SigninPage csrfToken={csrfToken(c)} returnTo={returnTo} email={email} error={error} />,
      status,
      PAGE_HEADERS,
    );

  if (!form.success) return render(400, "Enter your email and password.");
  if (!csrfValid(c, form.data.csrf_token))
    return render(403, "Your sign-in form expired. Please try again.", form.data.email);

  const outcome = await signIn(c.env, form.data.email, form.data.password, (s) =>
    callerEvent(c, { kind: "session.signin", ...bySessionUser(s, s.sessionId), details: { email: form.data.email } }),
  );
  if (!outcome.ok) {
    // Known accounts get the failure in their workspace's log; unknown emails have no workspace.
    if (outcome.workspaceId && outcome.userId) {
      await auditAlone(
        c.env,
        callerEvent(c, {
          kind: "session.signin",
          outcome: "denied",
          workspaceId: outcome.workspaceId,
          actor: { kind: "user", id: null },
          target: `user:${outcome.userId}`,
          subjectUserId: outcome.userId,
          details: { email: form.data.email, reason: "bad_credentials" },
        }),
      );
    }
    return render(401, WRONG_CREDENTIALS, form.data.email);
  }
  setCookie(c, SESSION_COOKIE, outcome.sessionToken, {
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    maxAge: SESSION_TTL_SECONDS,
  });
  return c.redirect(returnTo, 303);
});

signinRouter.post("/v1/signout", limitBody(), async (c) => {
  // Another origin may not sign the person out either (the cookie is SameSite=Lax, not Strict).
  if (crossOriginWrite(c)) throw new ApiError(403, "cross_origin_request", "Sign out from this service's own pages");
  const cookie = getCookie(c, SESSION_COOKIE);
  if (cookie)
    await signOut(c.env, cookie, (session) =>
      callerEvent(c, { kind: "session.signout", ...bySessionUser(session, session.id) }),
    );
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
  return c.redirect("/v1/signin", 303);
});
