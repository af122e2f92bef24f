/** Checks on what the user types into the options page (shared with the service worker). */

/** A personal access token as the service issues it: `svc_pat_` and base64url characters. */
export const isPat = (token: string) => /^svc_pat_[A-Za-z0-9_-]{16,200}$/.test(token);

/** The service's origin from what the user typed, or null when it is not an http(s) URL. */
export function serviceOrigin(raw: string): string | null {
  try {
    const url = new URL(raw.trim());
    return url.protocol === "http:" || url.protocol === "https:" ? url.origin : null;
  } catch {
    return null;
  }
}
