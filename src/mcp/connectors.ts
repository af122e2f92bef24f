import type * as X509 from "@peculiar/x509";
import { and, desc, eq } from "drizzle-orm";
import { type AuditEventInput, auditAlone, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { mcpConnectors } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId, randomToken } from "../platform/ids";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { workspaceRows, workspaceRowWhere } from "../platform/workspace-rows";

export const ENROLLMENT_TOKEN_PREFIX = "svc_enroll_";
/** How long an enrollment token may be redeemed. */
const TOKEN_TTL_MS = 15 * 60_000;
/** How long an issued client certificate is valid. */
const CERT_DAYS = 30;

const loadX509 = async () => (await import("./x509")).x509;

type Row = typeof mcpConnectors.$inferSelect;

export type ConnectorView = {
  connector_id: string;
  name: string;
  status: "pending" | "enrolled" | "revoked";
  created_at: string;
  enrolled_at: string | null;
  cert_serial: string | null;
  cert_expires_at: string | null;
};

const toView = (r: Row): ConnectorView => ({
  connector_id: r.id,
  name: r.name,
  status: r.status as ConnectorView["status"],
  created_at: r.createdAt,
  enrolled_at: r.enrolledAt,
  cert_serial: r.certSerial,
  cert_expires_at: r.certExpiresAt,
});

/** A pending connector and its one-time enrollment token (shown once; stored as SHA-256 only). */
export async function createConnector(
  env: Env,
  workspaceId: string,
  name: string,
  event: (id: string) => AuditEventInput,
) {
  const id = newId();
  const token = randomToken(ENROLLMENT_TOKEN_PREFIX);
  const now = new Date();
  const expiresAt = new Date(now.getTime() + TOKEN_TTL_MS).toISOString();
  const d = db(env);
  await d.batch([
    d.insert(mcpConnectors).values({
      id,
      workspaceId,
      name,
      status: "pending",
      tokenHash: hashToken(token),
      tokenExpiresAt: expiresAt,
      createdAt: now.toISOString(),
    }),
    auditInBatch(env, event(id)),
  ]);
  return { connector_id: id, enrollment_token: token, expires_at: expiresAt };
}

export async function listConnectors(env: Env, workspaceId: string): Promise<ConnectorView[]> {
  return (await workspaceRows(env, mcpConnectors, workspaceId, desc(mcpConnectors.createdAt))).map(toView);
}

/** Revokes a connector (its token can no longer be redeemed). Idempotent; another workspace's is a 404. */
export async function revokeConnector(
  env: Env,
  workspaceId: string,
  id: string,
  event: AuditEventInput,
): Promise<void> {
  const d = db(env);
  const mine = workspaceRowWhere(mcpConnectors, workspaceId, id);
  const row = await d.select({ status: mcpConnectors.status }).from(mcpConnectors).where(mine).get();
  if (!row) throw notFound("No such connector in this workspace");
  if (row.status === "revoked") return;
  const now = nowIso();
  await d.batch([
    d
      .update(mcpConnectors)
      .set({ status: "revoked", revokedAt: now })
      .where(and(mine, eq(mcpConnectors.status, row.status))),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
}

// ---- enrollment ----

/** A key's algorithm as WebCrypto describes it (EC curve, RSA size). */
type KeyAlgorithm = { name: string; namedCurve?: string; modulusLength?: number };
type SigningAlgorithm = { name: string; hash: string };

export type CaConfig = { cert: X509.X509Certificate; key: CryptoKey; signing: SigningAlgorithm };

const pemBody = (pem: string) => pem.replace(/-----(BEGIN|END)[^-]+-----/g, "").replace(/\s+/g, "");
const der = (pem: string) => Uint8Array.from(atob(pemBody(pem)), (c) => c.charCodeAt(0));

/** The workspace CA from CONNECTOR_CA_CERT_PEM / CONNECTOR_CA_KEY_PEM (PKCS#8), or null: enrollment is 503. */
export async function caConfig(env: Env): Promise<CaConfig | null> {
  if (!env.CONNECTOR_CA_CERT_PEM || !env.CONNECTOR_CA_KEY_PEM) return null;
  const x509 = await loadX509();
  const cert = new x509.X509Certificate(env.CONNECTOR_CA_CERT_PEM);
  const alg = cert.publicKey.algorithm as KeyAlgorithm;
  const ec = alg.name === "ECDSA";
  const importAlg = ec
    ? { name: "ECDSA", namedCurve: alg.namedCurve ?? "P-256" }
    : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  const key = await crypto.subtle.importKey("pkcs8", der(env.CONNECTOR_CA_KEY_PEM), importAlg, false, ["sign"]);
  const signing = ec
    ? { name: "ECDSA", hash: alg.namedCurve === "P-384" ? "SHA-384" : "SHA-256" }
    : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return { cert, key, signing };
}

const invalidCsr = (detail: string) => badRequest("invalid_csr", detail, [{ path: "csr_pem", message: detail }]);

/** Parses the CSR and checks its self-signature and key: EC P-256/P-384 or RSA of at least 2048 bits. */
export async function checkedCsr(pem: string): Promise<X509.Pkcs10CertificateRequest> {
  const x509 = await loadX509();
  let csr: X509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(pem);
  } catch {
    throw invalidCsr("Not a PEM certificate signing request");
  }
  const alg = csr.publicKey.algorithm as KeyAlgorithm;
  if (alg.name === "ECDSA") {
    if (!["P-256", "P-384"].includes(alg.namedCurve ?? "")) throw invalidCsr("EC keys must be P-256 or P-384");
  } else if (alg.name === "RSASSA-PKCS1-v1_5" || alg.name === "RSA-PSS") {
    if ((alg.modulusLength ?? 0) < 2048) throw invalidCsr("RSA keys must be at least 2048 bits");
  } else {
    throw invalidCsr("The key must be EC (P-256, P-384) or RSA (2048 bits or more)");
  }
  let valid = false;
  try {
    valid = await csr.verify();
  } catch {
    valid = false;
  }
  if (!valid) throw invalidCsr("The request's self-signature does not verify");
  return csr;
}

/** The one refusal of every unusable enrollment token, so a caller learns nothing about which it was. */
export const invalidEnrollmentToken = () =>
  new ApiError(
    403,
    "invalid_enrollment_token",
    "The enrollment token is missing, invalid, expired or already redeemed",
  );

/** A refused redemption of a known token (replayed, expired, revoked), in the connector's workspace. */
async function deniedEnrollment(env: Env, workspaceId: string, connectorId: string, reason: string) {
  await auditAlone(env, {
    workspaceId: workspaceId,
    kind: "mcp.connector.enroll",
    outcome: "denied",
    actor: { kind: "system", id: null },
    target: `mcp_connector:${connectorId}`,
    intent: "enroll",
    details: { connector_id: connectorId, reason },
  });
}

const randomSerial = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  // 0x01-0x7f first: a positive INTEGER with no leading zero octet, so the hex we store is the
  // serial every X.509 reader prints (a 0x00 first byte made it differ, 1 time in 128).
  bytes[0] = (bytes[0]! % 0x7f) + 1;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
};

/**
 * Redeems a one-time enrollment token for a client certificate signed by the workspace CA. The
 * certificate ignores the CSR's subject: CN = the connector id, SAN URI urn:svc:connector:<id>,
 * EKU clientAuth, 30 days, a random serial. The token is redeemed by one conditional UPDATE (with
 * its event), so of two concurrent redemptions exactly one gets a certificate.
 */
export async function enroll(env: Env, input: { csr_pem: string; token: string }) {
  const ca = await caConfig(env);
  if (!ca)
    throw new ApiError(503, "enrollment_not_configured", "Connector enrollment is not configured on this service");
  const tokenHash = input.token.startsWith(ENROLLMENT_TOKEN_PREFIX) ? hashToken(input.token) : null;
  const now = new Date();
  const pending = tokenHash ? await pendingConnector(env, tokenHash, now) : null;
  if (!tokenHash || !pending) throw invalidEnrollmentToken();
  const csr = await checkedCsr(input.csr_pem);
  const { cert, serial, notAfter } = await clientCertificate(ca, pending.id, csr.publicKey, now);
  if (!(await redeemToken(env, pending, tokenHash, { serial, notAfter, now }))) {
    await deniedEnrollment(env, pending.workspaceId, pending.id, "connector_enrolled");
    throw invalidEnrollmentToken();
  }
  return {
    workspaceId: pending.workspaceId,
    result: {
      connector_id: pending.id,
      cert_pem: cert.toString("pem"),
      ca_pem: ca.cert.toString("pem"),
      tunnel_addr: env.CONNECTOR_TUNNEL_ADDR ?? "",
      tunnel_server_name: env.CONNECTOR_TUNNEL_SERVER_NAME ?? "",
    },
  };
}

type ConnectorRow = typeof mcpConnectors.$inferSelect;

/**
 * The pending connector the token enrolls, or null for an unknown token. A spent token keeps
 * its hash (its connector is no longer pending): presented again, it is a replay, and the
 * connector's workspace sees the refusal in its audit log (as it does an expired token).
 */
async function pendingConnector(env: Env, tokenHash: string, now: Date): Promise<ConnectorRow | null> {
  const pending = await db(env).select().from(mcpConnectors).where(eq(mcpConnectors.tokenHash, tokenHash)).get();
  if (!pending) return null;
  if (pending.status !== "pending" || pending.tokenExpiresAt <= now.toISOString()) {
    const reason = pending.status === "pending" ? "token_expired" : `connector_${pending.status}`;
    await deniedEnrollment(env, pending.workspaceId, pending.id, reason);
    throw invalidEnrollmentToken();
  }
  return pending;
}

/** The connector's client certificate, signed by the workspace CA. */
async function clientCertificate(
  ca: NonNullable<Awaited<ReturnType<typeof caConfig>>>,
  connectorId: string,
  publicKey: Awaited<ReturnType<typeof checkedCsr>>["publicKey"],
  now: Date,
) {
  const x509 = await loadX509();
  const serial = randomSerial();
  const notAfter = new Date(now.getTime() + CERT_DAYS * 86_400_000);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject: `CN=${connectorId}`,
    issuer: ca.cert.subject,
    notBefore: now,
    notAfter,
    signingAlgorithm: ca.signing,
    publicKey,
    signingKey: ca.key,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false),
      new x509.SubjectAlternativeNameExtension([{ type: "url", value: `urn:svc:connector:${connectorId}` }], false),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert.publicKey),
    ],
  });
  return { cert, serial, notAfter };
}

/** Marks the connector enrolled, with its event, if the token is still pending; false when another call won. */
async function redeemToken(
  env: Env,
  pending: ConnectorRow,
  tokenHash: string,
  cert: { serial: string; notAfter: Date; now: Date },
): Promise<boolean> {
  const event: AuditEventInput = {
    workspaceId: pending.workspaceId,
    kind: "mcp.connector.enroll",
    actor: { kind: "system", id: null },
    target: `mcp_connector:${pending.id}`,
    intent: "enroll",
    details: { connector_id: pending.id, cert_serial: cert.serial, cert_expires_at: cert.notAfter.toISOString() },
  };
  const d = db(env);
  const [redeemed] = await d.batch([
    d
      .update(mcpConnectors)
      .set({
        status: "enrolled",
        enrolledAt: cert.now.toISOString(),
        certSerial: cert.serial,
        certExpiresAt: cert.notAfter.toISOString(),
      })
      .where(
        and(
          eq(mcpConnectors.id, pending.id),
          eq(mcpConnectors.tokenHash, tokenHash),
          eq(mcpConnectors.status, "pending"),
        ),
      )
      .returning({ id: mcpConnectors.id }),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  return redeemed.length > 0;
}
