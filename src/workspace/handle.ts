/**
 * Workspace handles: the URL handle and the email slug share one format and one namespace.
 * 3-32 characters of a-z, 0-9 and inner hyphens.
 */
export const HANDLE_PATTERN = /^[a-z0-9](?:[a-z0-9-]{1,30}[a-z0-9])$/;

/** Words no workspace may take: they name parts of the product, its pages or its mail. */
export const RESERVED_HANDLES: ReadonlySet<string> = new Set([
  "admin",
  "administrator",
  "api",
  "app",
  "apps",
  "assets",
  "auth",
  "billing",
  "blog",
  "cdn",
  "dashboard",
  "docs",
  "help",
  "login",
  "logout",
  "mail",
  "noreply",
  "no-reply",
  "oauth",
  "postmaster",
  "root",
  "security",
  "settings",
  "signin",
  "signout",
  "signup",
  "static",
  "status",
  "support",
  "system",
  "team",
  "www",
  "abuse",
  "webmaster",
  "hostmaster",
]);

export type HandleVerdict = { ok: true } | { ok: false; reason: "invalid" | "reserved" };

export function checkHandleFormat(handle: string): HandleVerdict {
  if (!HANDLE_PATTERN.test(handle) || handle.includes("--")) return { ok: false, reason: "invalid" };
  if (RESERVED_HANDLES.has(handle)) return { ok: false, reason: "reserved" };
  return { ok: true };
}

/** A handle suggested from a workspace name ("Acme Corp." → "acme-corp"), padded or cut to fit. */
export function handleFromName(name: string): string {
  let h = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 24)
    .replace(/-+$/, "");
  if (h.length < 3) h = `ws-${h || "team"}`.replace(/-+$/, "");
  if (RESERVED_HANDLES.has(h)) h = `${h}-ws`;
  return h;
}

/** A short random suffix to make a taken handle unique. */
export function withSuffix(handle: string): string {
  const suffix = Array.from(crypto.getRandomValues(new Uint8Array(3)), (b) => (b % 36).toString(36)).join("");
  return `${handle.slice(0, 27)}-${suffix}`;
}
