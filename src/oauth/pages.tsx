import type { FC } from "hono/jsx";
import type { Scope } from "../auth/scopes";
import { CsrfField, ErrorAlert, Layout } from "../platform/layout";

/** Each scope in plain words, as the consent screen shows it. */
export const SCOPE_TEXT: Record<Scope, string> = {
  admin:
    "Act as a workspace admin for you, for as long as you are one: add, remove and erase users, issue and revoke " +
    "their access tokens, create and change agents, change billing and workspace settings, and read the audit log",
  "agents:read": "See your workspace's agents",
  "agents:write": "Create and change agents",
  "conversations:read": "Read your conversations",
  "conversations:write": "Start conversations and send messages as you",
  "documents:read": "Read your documents and files",
  "documents:write": "Create and change documents and files",
  "billing:read": "See plans, credits and billing details",
  "profile:read": "See the business profile",
  "email:read": "Read email replies waiting for your review",
  "memory:read": "See what agents remember about you",
  "memory:write": "Change what agents may remember about you",
  "svc:computer": "Control the browser on your computer",
};

export type ConsentView = {
  clientName: string;
  /** For a client known only by its metadata document: the host that publishes the document. */
  documentHost?: string;
  /** The client returns to this computer (a loopback redirect URI). */
  loopbackRedirect?: boolean;
  redirectHost: string;
  userEmail: string;
  scopes: { scope: string; text: string; beyondRole: boolean }[];
  /** The authorization request's parameters, carried through unchanged. */
  params: Record<string, string>;
  csrfToken: string;
};

const DENY_STYLE = "background:#fff;color:#333;border:1px solid #ccd";

export const ConsentPage: FC<ConsentView> = (p) => (
  <Layout title={`Allow ${p.clientName}?`}>
    <h1>
      Allow <strong>{p.clientName}</strong> to access your account?
    </h1>
    {p.documentHost ? (
      <p>
        The application describes itself as <strong>{p.clientName}</strong> in a document published by{" "}
        <strong>{p.documentHost}</strong>. That name is its own claim; {p.documentHost} is who vouches for it.
      </p>
    ) : null}
    <p>
      Signed in as <strong>{p.userEmail}</strong>. After your decision you will be sent to{" "}
      <strong>{p.redirectHost}</strong>.
    </p>
    {p.documentHost && p.loopbackRedirect ? (
      <ErrorAlert>
        This application runs on your own computer ({p.redirectHost}). Only allow it if you started it yourself just
        now: any program on this computer could claim to be it.
      </ErrorAlert>
    ) : null}
    <p>This application will be able to:</p>
    <ul>
      {p.scopes.map((s) => (
        <li>
          {s.text} <small>({s.scope})</small>
          {s.beyondRole ? <em> — not available to your role, so the app will not get it</em> : null}
        </li>
      ))}
    </ul>
    <p>
      <small>
        This application is not operated by us. Only allow it if you trust {p.documentHost ?? p.redirectHost}.
      </small>
    </p>
    <form method="post" action="/v1/oauth/consent">
      {Object.entries(p.params).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <CsrfField token={p.csrfToken} />
      <button type="submit" name="decision" value="approve">
        Allow
      </button>
      <button type="submit" name="decision" value="deny" style={DENY_STYLE}>
        Deny
      </button>
    </form>
  </Layout>
);

export const AuthorizeErrorPage: FC<{ message: string; error?: string }> = ({ message, error }) => (
  <Layout title="Authorization error">
    <h1>This sign-in link cannot be used</h1>
    <ErrorAlert>{message}</ErrorAlert>
    {error ? (
      <p>
        <small>
          Error: <code>{error}</code>
        </small>
      </p>
    ) : null}
    <p>Go back to the application and try again. If it keeps happening, contact the application's developer.</p>
  </Layout>
);

/**
 * Sends the browser on to the client from a fresh document. Used when the authorization
 * request arrived through our own sign-in form's redirect chain: browsers apply that form's
 * CSP `form-action 'self'` to every redirect after the submission, so a 302 to the client
 * would be blocked there.
 */
export const ContinuePage: FC<{ location: string; host: string }> = ({ location, host }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta http-equiv="refresh" content={`0;url=${location}`} />
      <title>Returning to the application</title>
    </head>
    <body>
      <p>
        Returning to <a href={location}>{host}</a>…
      </p>
    </body>
  </html>
);
