import type { FC } from "hono/jsx";
import { Layout } from "../platform/layout";

export const SigninPage: FC<{ csrfToken: string; returnTo: string; email?: string; error?: string }> = (p) => (
  <Layout title="Sign in">
    <h1>Sign in</h1>
    {p.error ? (
      <p class="error" role="alert">
        {p.error}
      </p>
    ) : null}
    <form method="post" action="/v1/signin">
      <input type="hidden" name="csrf_token" value={p.csrfToken} />
      <input type="hidden" name="return_to" value={p.returnTo} />
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value={p.email ?? ""} />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      <button type="submit">Sign in</button>
    </form>
  </Layout>
);
