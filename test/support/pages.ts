import { call } from "./api";

export type Form = Record<string, string | string[]>;

/** A browser for the server-rendered pages: keeps cookies between calls, posts forms. */
export class Browser {
  cookies = new Map<string, string>();

  async request(method: string, path: string, form?: Form, headers: Record<string, string> = {}) {
    const all: Record<string, string> = {
      Cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      ...headers,
    };
    let rawBody: string | undefined;
    if (form) {
      const body = new URLSearchParams();
      for (const [name, value] of Object.entries(form)) for (const v of [value].flat()) body.append(name, v);
      rawBody = body.toString();
      all["Content-Type"] = "application/x-www-form-urlencoded";
    }
    const res = await call(method, path, { headers: all, rawBody });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const [name, ...rest] = pair!.split("=");
      const value = rest.join("=");
      if (/Max-Age=0|expires=Thu, 01 Jan 1970/i.test(c) || value === "") this.cookies.delete(name!);
      else this.cookies.set(name!, value);
    }
    return res;
  }

  /** The CSRF token of the form on a page (the sign-in page by default). */
  async csrf(path = "/v1/signin") {
    const page = await (await this.request("GET", path)).text();
    return csrfOf(page);
  }
}

export const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
