import { isMappedHost } from "../platform/outbound-rules";
import { badRequest } from "../platform/problem";

/**
 * Suffixes reserved for special use (RFC 2606, 6761, 6762, 8375 and common private ones): no
 * public website can live under them. A host mapped by `OUTBOUND_ORIGIN_MAP` is exempt, so
 * local development and tests can use `acme.test`.
 */
const RESERVED_SUFFIXES = [
  "localhost",
  "local",
  "internal",
  "test",
  "example",
  "invalid",
  "onion",
  "localdomain",
  "lan",
  "intranet",
  "home.arpa",
];

export const MAX_DOMAIN_LENGTH = 253;

export type DomainCheck = { ok: true; domain: string } | { ok: false; reason: string };

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Normalizes what an admin typed as the business's domain (docs/business-profile.md):
 * trim, lowercase, drop scheme, credentials, path, query, fragment, port and a leading `www.`,
 * IDNA to ASCII; refuses IP literals (v4 in any form, v6), single labels, `localhost` and
 * reserved suffixes (unless mapped by `OUTBOUND_ORIGIN_MAP`), and names over 253 characters.
 */
export function checkDomain(env: Env, raw: string): DomainCheck {
  const fail = (reason: string): DomainCheck => ({ ok: false, reason });
  let s = raw.trim().toLowerCase();
  if (!s) return fail("the domain is empty");
  s = s.replace(/^[a-z][a-z0-9+.-]*:\/\//, "").replace(/^\/\//, "");
  let host = s.split(/[/?#\\]/, 1)[0] ?? "";
  host = host.slice(host.lastIndexOf("@") + 1);
  if (host.startsWith("[") || (host.match(/:/g)?.length ?? 0) > 1) return fail("IP addresses are not allowed");
  let url: URL;
  try {
    url = new URL(`https://${host}/`);
  } catch {
    return fail("not a valid domain name");
  }
  let name = url.hostname.replace(/\.$/, "");
  if (name.startsWith("[")) return fail("IP addresses are not allowed");
  if (name.startsWith("www.")) name = name.slice(4);
  if (!name) return fail("not a valid domain name");
  const labels = name.split(".");
  const last = labels[labels.length - 1]!;
  // The URL parser turns every IPv4 form (decimal, octal, hex) into dotted decimal.
  if (/^[0-9.]+$/.test(name) || /^(0x[0-9a-f]*|[0-9]+)$/.test(last)) return fail("IP addresses are not allowed");
  if (name.length > MAX_DOMAIN_LENGTH) return fail(`longer than ${MAX_DOMAIN_LENGTH} characters`);
  if (!labels.every((l) => LABEL.test(l))) return fail("not a valid domain name");
  const reserved = RESERVED_SUFFIXES.some((r) => name === r || name.endsWith(`.${r}`));
  if (labels.length < 2)
    return fail(name === "localhost" ? "localhost is not a public domain" : "a single label is not a public domain");
  if (reserved && !isMappedHost(env, name)) return fail("a local or reserved name is not a public domain");
  return { ok: true, domain: name };
}

/** `checkDomain`, or the 400 `invalid_domain` problem with its reason. */
export function normalizeDomain(env: Env, raw: string): string {
  const check = checkDomain(env, raw);
  if (!check.ok)
    throw badRequest("invalid_domain", `Invalid domain: ${check.reason}`, [{ path: "domain", message: check.reason }]);
  return check.domain;
}
