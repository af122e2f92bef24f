import type { FC } from "hono/jsx";
import { CsrfField, ErrorAlert, Layout } from "../platform/layout";

export const SigninPage: FC<{ csrfToken: string; returnTo: string; email?: string; error?: string }> = (p) => (
  <Layout title="Sign in">
    <h1>Sign in</h1>
    {p.error ? <ErrorAlert>{p.error}</ErrorAlert> : null}
    <form method="post" action="/v1/signin">
      <CsrfField token={p.csrfToken} />
      <input type="hidden" name="return_to" value={p.returnTo} />
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value={p.email ?? ""} />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      <button type="submit">Sign in</button>
    </form>
  </Layout>
);
