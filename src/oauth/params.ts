import { OAuthError } from "../http/errors";
import { invalidClient, invalidRequest } from "./errors";

/**
 * The parameters of a token, introspection or revocation request: a form
 * (`application/x-www-form-urlencoded`, also what a body without a Content-Type is read as)
 * or a JSON object, through the same rules; any other media type is refused. A parameter
 * given twice is refused; an empty one counts as absent (RFC 6749 §3.1).
 */
export async function readParams(req: Request): Promise<Map<string, string>> {
  const type = (req.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
  // Decoded by hand: workerd warns when .text() reads a body whose type is not text/*.
  const text = new TextDecoder().decode(await req.arrayBuffer());
  const params = new Map<string, string>();
  // Tracked apart from `params`, which leaves out empty values: `a=&a=x` is a repeat too.
  const seen = new Set<string>();
  const put = (key: string, value: string) => {
    if (seen.has(key)) throw invalidRequest(`The parameter ${key} is given more than once`);
    seen.add(key);
    if (value !== "") params.set(key, value);
  };
  if (type === "application/json" || type.endsWith("+json")) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw invalidRequest("The body is not valid JSON");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body))
      throw invalidRequest("The JSON body must be an object");
    for (const [key, value] of Object.entries(body)) {
      if (value === null || value === undefined) continue;
      if (typeof value !== "string") throw invalidRequest(`The parameter ${key} must be a string`);
      put(key, value);
    }
    return params;
  }
  if (type === "application/x-www-form-urlencoded" || type === "") {
    for (const [key, value] of new URLSearchParams(text)) put(key, value);
    return params;
  }
  throw invalidRequest("The body must be application/x-www-form-urlencoded or application/json");
}

/** Decodes one form-urlencoded component of HTTP Basic client credentials (RFC 6749 §2.3.1). */
function formDecode(s: string): string {
  return decodeURIComponent(s.replaceAll("+", " "));
}

/** Client credentials from `Authorization: Basic`, or null when the header is absent or another scheme. */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  if (!header) return null;
  const match = /^Basic[ ]+([A-Za-z0-9+/=]+)[ ]*$/i.exec(header);
  if (!match) {
    if (/^Basic\b/i.test(header)) throw invalidClient("Malformed Basic credentials", true);
    return null;
  }
  try {
    const decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(
      Uint8Array.from(atob(match[1]!), (ch) => ch.charCodeAt(0)),
    );
    const colon = decoded.indexOf(":");
    if (colon <= 0) throw new Error("no colon, or no client id before it");
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient("Malformed Basic credentials", true);
  }
}

/** Registration and its management take JSON only. */
export async function readJsonBody(req: Request): Promise<unknown> {
  const type = (req.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json")
    throw new OAuthError(400, "invalid_client_metadata", "The body must be JSON (Content-Type: application/json)");
  try {
    return await req.json();
  } catch {
    throw new OAuthError(400, "invalid_client_metadata", "The body is not valid JSON");
  }
}
