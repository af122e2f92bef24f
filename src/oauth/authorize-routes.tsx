import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { accepts } from "hono/accepts";
import { getCookie } from "hono/cookie";
import { auditAlone } from "../audit/events";
import { resolveSession, SESSION_COOKIE } from "../auth/resolve";
import { grantableFor, isScope, roleCeiling } from "../auth/scopes";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { logUnhandled, oauthJson, renderError } from "../http/errors";
import { refuseCrossOrigin } from "../http/guards";
import { contractRoute, limitBody } from "../http/route";
import { baseUrl } from "../platform/env";
import { PAGE_HEADERS } from "../platform/pages";
import { ApiError } from "../platform/problem";
import {
  AUTHORIZE_PARAMS,
  type AuthorizeRequest,
  authorizationRedirect,
  checkAuthorizeRequest,
  consentCovers,
  consentCsrfToken,
  consentCsrfValid,
  recordConsent,
} from "./authorize";
import { isDocumentClient, isDocumentClientId } from "./client-documents";
import { issueCode } from "./code-exchange";
import { OAuthErrorSchema } from "./errors";
import { AuthorizeErrorPage, ConsentPage, ContinuePage, SCOPE_TEXT } from "./pages";
import { AuthorizeQuerySchema } from "./schemas";

/** The browser side of the authorization server: authorize and the consent form (HTML). */
export const authorizeRouter = new OpenAPIHono<AppEnv>();

type Ctx = Context<AppEnv>;

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);
type Session = { secret: string; caller: AppEnv["Variables"]["caller"] };

authorizeRouter.onError((err, c) => {
  // The contract's own refusals (a body over the limit) keep their problem shape.
  if (err instanceof ApiError) return renderError(err, c, { format: "problem" });
  logUnhandled(c, err);
  return c.html(
    <AuthorizeErrorPage message="Something went wrong on our side. Please try again." />,
    500,
    PAGE_HEADERS,
  );
});

/**
 * A request the authorization server will not act on, answered where it stands (only the
 * user's `access_denied` travels to the client): a browser gets a page that says why, a
 * program the OAuth error JSON.
 */
function authorizeError(c: Ctx, status: 400 | 403, error: string, message: string) {
  const type = accepts(c, {
    header: "Accept",
    supports: ["text/html", "application/json"],
    default: "application/json",
  });
  if (type === "application/json") return oauthJson(c, status, error, message);
  return c.html(<AuthorizeErrorPage message={message} error={error} />, status, PAGE_HEADERS);
}

const noScopeForRole = (c: Ctx) =>
  authorizeError(c, 400, "invalid_scope", "None of the requested scopes is available to your role");

async function currentSession(c: Ctx): Promise<Session | null> {
  const secret = getCookie(c, SESSION_COOKIE);
  if (!secret) return null;
  const resolved = await resolveSession(c.env, secret);
  return resolved ? { secret, caller: resolved.caller } : null;
}

/**
 * The consent page may send the browser on to the client's redirect URI after the form
 * post, so its `form-action` names that origin as well as our own (browsers enforce
 * form-action on the redirect that follows a submission).
 */
function consentHeaders(redirectUri: string): Record<string, string> {
  const origin = new URL(redirectUri).origin;
  const safeOrigin = /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/.test(origin) ? ` ${origin}` : "";
  return {
    ...PAGE_HEADERS,
    "Content-Security-Policy": PAGE_HEADERS["Content-Security-Policy"]!.replace(
      "form-action 'self'",
      `form-action 'self'${safeOrigin}`,
    ),
  };
}

/**
 * Redirects to the client. A navigation that our own sign-in form started (the redirect
 * chain sign-in POST → 303 → authorize) gets a document that moves on instead, because the
 * sign-in page's `form-action 'self'` also governs every redirect of that submission.
 */
function toClient(c: Ctx, location: string, status: 302 | 303) {
  if (
    c.req.method === "GET" &&
    c.req.header("Sec-Fetch-Site") === "same-origin" &&
    c.req.header("Sec-Fetch-Mode") === "navigate"
  ) {
    return c.html(<ContinuePage location={location} host={new URL(location).host} />, 200, PAGE_HEADERS);
  }
  return c.redirect(location, status);
}

/**
 * Issues the code for the scopes this user may hold now (`admin` only while an admin); a
 * request left with none of them is `invalid_scope`.
 */
async function redirectWithCode(c: Ctx, req: AuthorizeRequest, session: Session, status: 302 | 303) {
  const issuer = baseUrl(c.env, c.req.url);
  const scopes = grantableFor(req.scopes, session.caller.role);
  if (!scopes.length) return noScopeForRole(c);
  const code = await issueCode(c.env, {
    clientId: req.client.clientId,
    workspaceId: session.caller.workspace.id,
    userId: session.caller.userId,
    redirectUri: req.redirectUri,
    scopes,
    codeChallenge: req.codeChallenge,
    resource: req.resource,
  });
  return toClient(c, authorizationRedirect(req.redirectUri, issuer, { code, state: req.state }), status);
}

async function authorize(c: Ctx) {
  const url = new URL(c.req.url);
  const signIn = () => c.redirect(`/v1/signin?return_to=${encodeURIComponent(url.pathname + url.search)}`, 302);
  // A metadata document is fetched for a signed-in user only: an anonymous visitor cannot make
  // the service fetch URLs or store clients by opening authorization links.
  const ids = url.searchParams.getAll("client_id");
  const documentClientId = ids.length === 1 && isDocumentClientId(ids[0]!);
  const early = documentClientId ? await currentSession(c) : null;
  if (documentClientId && !early) return signIn();

  // (a document client only gets here signed in)
  const check = await checkAuthorizeRequest(c.env, url.searchParams, baseUrl(c.env, c.req.url), true);
  if (check.kind === "error") return authorizeError(c, 400, check.error, check.message);
  const req = check.request;

  const session = early ?? (await currentSession(c));
  if (!session) return signIn();
  // Refused before consent: approving scopes the role cannot hold would lead nowhere.
  if (!grantableFor(req.scopes, session.caller.role).length) return noScopeForRole(c);

  // A client known only by its metadata document is asked about every time: anyone can publish one.
  const document = isDocumentClient(req.client);
  if (
    req.client.firstParty ||
    (!document && (await consentCovers(c.env, session.caller.userId, req.client.clientId, req.scopes)))
  ) {
    return redirectWithCode(c, req, session, 302);
  }
  const ceiling = roleCeiling(session.caller.role);
  const redirect = new URL(req.redirectUri);
  return c.html(
    <ConsentPage
      clientName={req.client.name}
      documentHost={document ? new URL(req.client.clientId).host : undefined}
      loopbackRedirect={LOOPBACK.has(redirect.hostname)}
      redirectHost={redirect.host}
      userEmail={session.caller.email ?? ""}
      scopes={req.scopes.filter(isScope).map((s) => ({ scope: s, text: SCOPE_TEXT[s], beyondRole: !ceiling.has(s) }))}
      params={req.params}
      csrfToken={consentCsrfToken(session.secret, req)}
    />,
    200,
    consentHeaders(req.redirectUri),
  );
}

authorizeRouter.openapi(
  contractRoute({
    method: "get",
    path: "/v1/oauth/authorize",
    tags: ["OAuth"],
    summary: "Authorization endpoint (browser)",
    description:
      "Needs the user's session; a signed-out browser is sent to sign-in and back. Redirect URIs must be on the client's allowlist " +
      "(loopback `http` URIs match on any port). A request that cannot be used is answered 400 where it stands, never redirected: an HTML " +
      "page for a browser (`Accept` preferring `text/html`), otherwise the OAuth error JSON. Its `error` is `invalid_client` (unknown or " +
      "deleted client), `invalid_request` (missing or repeated parameter, unregistered redirect_uri, a code_challenge missing or not " +
      "32-128 base64url characters, a code_challenge_method other than S256), `unsupported_response_type`, `invalid_target` (resource) " +
      "or `invalid_scope`. Only the user's refusal goes back to redirect_uri (`error=access_denied`, `state`, `iss`). The granted " +
      "scope is the requested scope ∩ the client's scopes (all of them when none is requested) ∩ what the user's role allows now " +
      "(`admin` only for an admin); `svc:computer` is never granted (dropped from a mixed request, `invalid_scope` when it is all that " +
      "was asked, as is a request left with nothing the role allows). Third-party clients get a consent page the first time and " +
      "whenever the scopes grow. Success: 302 with `code`, `state`, `iss`.",
    request: { query: AuthorizeQuerySchema },
    responses: {
      302: { description: "Redirect to redirect_uri with a code, or to sign-in" },
      200: { description: "Consent page (HTML)" },
      400: {
        description: "The request cannot be used: an error page (HTML) for a browser, otherwise the OAuth error JSON",
        content: { "text/html": { schema: { type: "string" } }, "application/json": { schema: OAuthErrorSchema } },
      },
    },
  }),
  authorize,
  // The query schema documents the parameters; `checkAuthorizeRequest` judges them, in an
  // order that names the most basic fault first. A query the schema refuses goes to the same
  // handler.
  (result, c) => (result.success ? undefined : authorize(c)),
);

authorizeRouter.post("/v1/oauth/consent", limitBody(), async (c) => {
  const form = await c.req.parseBody({ all: true }).catch(() => null);
  if (!form) return authorizeError(c, 400, "invalid_request", "The consent form could not be read.");
  const query = new URLSearchParams();
  for (const name of AUTHORIZE_PARAMS) {
    for (const v of [form[name]].flat()) if (typeof v === "string") query.append(name, v);
  }
  const issuer = baseUrl(c.env, c.req.url);
  const session = await currentSession(c);
  const check = await checkAuthorizeRequest(c.env, query, issuer, session !== null);
  if (check.kind === "error") return authorizeError(c, 400, check.error, check.message);
  const req = check.request;

  // Signed out meanwhile: start the authorization again, through sign-in.
  if (!session) return c.redirect(`/v1/oauth/authorize?${new URLSearchParams(req.params)}`, 303);
  const csrf = form.csrf_token;
  if (!consentCsrfValid(session.secret, req, typeof csrf === "string" ? csrf : undefined)) {
    return authorizeError(
      c,
      403,
      "invalid_request",
      "This consent form has expired or was not issued to you. Go back to the application and start again.",
    );
  }
  c.set("caller", session.caller);
  await refuseCrossOrigin(c);
  const decision = form.decision;
  const event = {
    target: `oauth_client:${req.client.clientId}`,
    subjectUserId: session.caller.userId,
    details: { client_id: req.client.clientId, client_name: req.client.name, scopes: req.scopes },
  };
  if (decision === "deny") {
    await auditAlone(
      c.env,
      callerEvent(c, { kind: "oauth.consent.deny", outcome: "denied", intent: "deny", ...event }),
    );
    return c.redirect(
      authorizationRedirect(req.redirectUri, issuer, {
        error: "access_denied",
        error_description: "The user denied the request",
        state: req.state,
      }),
      303,
    );
  }
  if (decision !== "approve") return authorizeError(c, 400, "invalid_request", "Choose Allow or Deny.");
  await recordConsent(
    c.env,
    {
      workspaceId: session.caller.workspace.id,
      userId: session.caller.userId,
      clientId: req.client.clientId,
      scopes: req.scopes,
    },
    callerEvent(c, { kind: "oauth.consent.grant", intent: "approve", ...event }),
  );
  return redirectWithCode(c, req, session, 303);
});
