import type { FC } from "hono/jsx";
import type { Caller } from "../auth/caller";
import { CsrfField, ErrorAlert, Layout } from "../platform/layout";

/** The form's last input, shown again when it was refused. */
export type TokenFormInput = { name?: string; scopes?: readonly string[]; expiresInDays?: string };

export type AccountView = {
  caller: Caller;
  /** The scopes the form offers: what the caller's role may hold. */
  scopes: readonly string[];
  csrfToken: string;
  form?: TokenFormInput;
  error?: string;
};

const CHECKBOX_STYLE = "width:auto;margin:0 .5rem 0 0";
const SECONDARY_STYLE = "background:#fff;color:#333;border:1px solid #ccd";
const TOKEN_STYLE = "display:block;word-break:break-all;background:#f0f2f7;padding:.6rem;border-radius:6px";

const Identity: FC<{ caller: Caller }> = ({ caller }) => (
  <dl>
    <dt>Name</dt>
    <dd>{caller.name ?? "—"}</dd>
    <dt>Email</dt>
    <dd>{caller.email ?? "—"}</dd>
    <dt>Role</dt>
    <dd>{caller.role}</dd>
    <dt>Workspace</dt>
    <dd>
      {caller.workspace.name} (<code>{caller.workspace.slug}</code>)
    </dd>
  </dl>
);

const SignOut: FC = () => (
  <form method="post" action="/v1/signout">
    <button type="submit" style={SECONDARY_STYLE}>
      Sign out
    </button>
  </form>
);

/** The signed-in page: who you are, the API reference, a personal access token form, sign-out. */
export const AccountPage: FC<AccountView> = (p) => {
  const checked = new Set(p.form?.scopes ?? []);
  return (
    <Layout title="Your account">
      <h1>Your account</h1>
      <Identity caller={p.caller} />
      <p>
        <a href="/v1/docs">API reference</a>
      </p>
      <h2>New personal access token</h2>
      {p.error ? <ErrorAlert>{p.error}</ErrorAlert> : null}
      <form method="post" action="/v1/account/tokens">
        <CsrfField token={p.csrfToken} />
        <label for="token-name">Name</label>
        <input id="token-name" name="name" required maxlength={100} value={p.form?.name ?? ""} />
        <fieldset>
          <legend>Scopes</legend>
          {p.scopes.map((scope) => (
            <label>
              <input type="checkbox" name="scopes" value={scope} checked={checked.has(scope)} style={CHECKBOX_STYLE} />
              {scope}
            </label>
          ))}
        </fieldset>
        <label for="token-expiry">Expires after (days, optional)</label>
        <input
          id="token-expiry"
          name="expires_in_days"
          type="number"
          min={1}
          max={3650}
          value={p.form?.expiresInDays ?? ""}
        />
        <button type="submit">Create token</button>
      </form>
      <SignOut />
    </Layout>
  );
};

export type CreatedTokenView = {
  token: string;
  name: string;
  scopes: readonly string[];
  expiresAt: string | null;
};

/** The one time a new token's secret is shown. */
export const TokenCreatedPage: FC<CreatedTokenView> = (p) => (
  <Layout title="Token created">
    <h1>Token created</h1>
    <p>Copy this token now: it is shown only once.</p>
    <code id="token" style={TOKEN_STYLE}>
      {p.token}
    </code>
    <dl>
      <dt>Name</dt>
      <dd>{p.name}</dd>
      <dt>Scopes</dt>
      <dd>{p.scopes.join(", ")}</dd>
      <dt>Expires</dt>
      <dd>{p.expiresAt ?? "never"}</dd>
    </dl>
    <p>
      Send it as <code>Authorization: Bearer …</code>. <a href="/v1/account">Back to your account</a>
    </p>
    <SignOut />
  </Layout>
);
