import type { FC, PropsWithChildren } from "hono/jsx";

const STYLE = `body{font-family:system-ui,sans-serif;background:#f5f6f8;margin:0}
main{max-width:380px;margin:10vh auto;background:#fff;padding:2rem;border-radius:12px;box-shadow:0 2px 12px #0001}
h1{font-size:1.4rem;margin-top:0}label{display:block;margin:.8rem 0 .3rem}
input{width:100%;padding:.6rem;box-sizing:border-box;border:1px solid #ccd;border-radius:6px}
button{margin-top:1.2rem;width:100%;padding:.7rem;border:0;border-radius:6px;background:#2b59c3;color:#fff;font-size:1rem}
.error{color:#b00020;background:#fde8ec;padding:.6rem;border-radius:6px}`;

export const Layout: FC<PropsWithChildren<{ title: string }>> = ({ title, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{title}</title>
      <style>{STYLE}</style>
    </head>
    <body>
      <main>{children}</main>
    </body>
  </html>
);

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
