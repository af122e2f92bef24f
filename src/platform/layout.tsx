import type { FC, PropsWithChildren } from "hono/jsx";

/** The frame of every HTML page the service serves (sign-in, consent, errors). */
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

/** An error stated at the top of a page or form, announced to screen readers. */
export const ErrorAlert: FC<PropsWithChildren> = ({ children }) => (
  <p class="error" role="alert">
    {children}
  </p>
);

/** The hidden field that sends the page's CSRF token back with its form. */
export const CsrfField: FC<{ token: string }> = ({ token }) => <input type="hidden" name="csrf_token" value={token} />;
