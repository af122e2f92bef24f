import { env } from "cloudflare:workers";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { beforeAll, describe, expect, it } from "vitest";
import { ConnectorListSchema, CreatedConnectorSchema, EnrollmentResultSchema } from "../src/mcp/schemas";
import opensslP256 from "./fixtures/connector/openssl-p256.csr?raw";
import opensslRsa1024 from "./fixtures/connector/openssl-rsa1024.csr?raw";
import { call, expectProblem, parse } from "./support/api";
import { callWith } from "./support/app";
import { auditEvents } from "./support/audit";
import { addUser, signupWorkspace } from "./support/seed";

x509.cryptoProvider.set(crypto);

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
let ca: { cert: x509.X509Certificate; config: Record<string, string> };

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${btoa(String.fromCharCode(...new Uint8Array(der)))
    .match(/.{1,64}/g)!
    .join("\n")}\n-----END ${label}-----\n`;

beforeAll(async () => {
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=Test Workspace CA",
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    keys,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  ca = {
    cert,
    config: {
      CONNECTOR_CA_CERT_PEM: cert.toString("pem"),
      CONNECTOR_CA_KEY_PEM: pem(
        "PRIVATE KEY",
        (await crypto.subtle.exportKey("pkcs8", keys.privateKey)) as ArrayBuffer,
      ),
      CONNECTOR_TUNNEL_ADDR: "tunnel.svc.test:443",
      CONNECTOR_TUNNEL_SERVER_NAME: "tunnel.svc.test",
    },
  };
});

/** A CSR made with @peculiar/x509 (the reference CLI's way), with a subject that must be ignored. */
async function csrPem(
  alg: { name: string; namedCurve?: string; modulusLength?: number; publicExponent?: Uint8Array; hash?: string } = EC,
) {
  const keys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: "CN=admin.example.com, O=Someone Else",
    keys,
    signingAlgorithm: alg.namedCurve ? EC : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  });
  return csr.toString("pem");
}

async function newConnector(token: string, name = "Office") {
  const res = await call("POST", "/v1/mcp/connectors", { token, body: { name } });
  expect(res.status).toBe(201);
  return parse(res, CreatedConnectorSchema);
}

const enroll = (body: unknown, config: Record<string, string> = ca.config) =>
  callWith(config, "POST", "/v1/mcp/connectors/enroll", { body });

describe("connectors", () => {
  it("creates (admin only), lists and revokes connectors, each audited", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    await expectProblem(await call("POST", "/v1/mcp/connectors", { token: member.token, body: { name: "x" } }), 403);
    const created = await newConnector(ws.adminToken);
    expect(created.enrollment_token).toMatch(/^svc_enroll_/);
    expect(Date.parse(created.expires_at) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const stored = await env.DB.prepare("SELECT token_hash FROM mcp_connectors WHERE id = ?1")
      .bind(created.connector_id)
      .first<{ token_hash: string }>();
    expect(stored!.token_hash).not.toContain(created.enrollment_token);
    const list = await parse(await call("GET", "/v1/mcp/connectors", { token: ws.adminToken }), ConnectorListSchema);
    expect(list.connectors).toEqual([
      expect.objectContaining({ connector_id: created.connector_id, status: "pending", cert_serial: null }),
    ]);
    const other = await signupWorkspace();
    await expectProblem(
      await call("DELETE", `/v1/mcp/connectors/${created.connector_id}`, { token: other.adminToken }),
      404,
    );
    expect((await call("DELETE", `/v1/mcp/connectors/${created.connector_id}`, { token: ws.adminToken })).status).toBe(
      204,
    );
    expect((await call("DELETE", `/v1/mcp/connectors/${created.connector_id}`, { token: ws.adminToken })).status).toBe(
      204,
    );
    await expectProblem(await enroll({ csr_pem: await csrPem(), token: created.enrollment_token }), 403);
    expect((await auditEvents(ws.workspace.id, "mcp.connector.enroll"))[0]).toMatchObject({
      outcome: "denied",
      details: { reason: "connector_revoked" },
    });
    expect((await auditEvents(ws.workspace.id, "mcp.connector.create"))[0]).toMatchObject({
      details: { name: "Office" },
    });
    expect(await auditEvents(ws.workspace.id, "mcp.connector.revoke")).toHaveLength(1);
    expect(JSON.stringify(await auditEvents(ws.workspace.id))).not.toContain(created.enrollment_token);
  });

  it("issues a certificate that verifies against the CA and carries only the service's subject", async () => {
    const ws = await signupWorkspace();
    const { connector_id, enrollment_token } = await newConnector(ws.adminToken);
    const res = await enroll({ csr_pem: await csrPem(), token: enrollment_token });
    expect(res.status).toBe(200);
    const result = await parse(res, EnrollmentResultSchema);
    expect(result).toMatchObject({
      connector_id,
      tunnel_addr: "tunnel.svc.test:443",
      tunnel_server_name: "tunnel.svc.test",
    });
    const cert = new x509.X509Certificate(result.cert_pem);
    expect(await cert.verify({ publicKey: ca.cert.publicKey, signatureOnly: true })).toBe(true);
    expect(cert.subject).toBe(`CN=${connector_id}`);
    expect(cert.issuer).toBe(ca.cert.subject);
    expect(new x509.X509Certificate(result.ca_pem).equal(ca.cert)).toBe(true);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension)!;
    expect(san.names.toJSON()).toEqual([{ type: "url", value: `urn:svc:connector:${connector_id}` }]);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    const days = (cert.notAfter.getTime() - cert.notBefore.getTime()) / 86_400_000;
    expect(Math.round(days)).toBe(30);
    const list = await parse(await call("GET", "/v1/mcp/connectors", { token: ws.adminToken }), ConnectorListSchema);
    expect(list.connectors[0]).toMatchObject({ status: "enrolled", cert_serial: cert.serialNumber });
    expect((await auditEvents(ws.workspace.id, "mcp.connector.enroll"))[0]).toMatchObject({
      target: `mcp_connector:${connector_id}`,
      details: { cert_serial: cert.serialNumber },
    });
    // The token was redeemed: a second use is refused, and the workspace sees the replay.
    await expectProblem(
      await enroll({ csr_pem: await csrPem(), token: enrollment_token }),
      403,
      "invalid_enrollment_token",
    );
    const replay = (await auditEvents(ws.workspace.id, "mcp.connector.enroll")).find((e) => e.outcome === "denied");
    expect(replay).toMatchObject({
      target: `mcp_connector:${connector_id}`,
      details: { connector_id, reason: "connector_enrolled" },
    });
  });

  it("accepts an openssl CSR (its subject ignored), refuses a bad signature, a weak key and junk with invalid_csr", async () => {
    const ws = await signupWorkspace();
    const a = await newConnector(ws.adminToken);
    const fromOpenssl = await parse(
      await enroll({ csr_pem: opensslP256, token: a.enrollment_token }),
      EnrollmentResultSchema,
    );
    expect(new x509.X509Certificate(fromOpenssl.cert_pem).subject).toBe(`CN=${a.connector_id}`);

    const b = await newConnector(ws.adminToken);
    await expectProblem(await enroll({ csr_pem: opensslRsa1024, token: b.enrollment_token }), 400, "invalid_csr");
    const good = new x509.Pkcs10CertificateRequest(await csrPem());
    const bytes = new Uint8Array(good.rawData);
    bytes[bytes.length - 5]! ^= 0xff; // inside the signature
    const tampered = pem("CERTIFICATE REQUEST", bytes.buffer);
    await expectProblem(await enroll({ csr_pem: tampered, token: b.enrollment_token }), 400, "invalid_csr");
    await expectProblem(await enroll({ csr_pem: "not a csr", token: b.enrollment_token }), 400, "invalid_csr");
    // A refused CSR does not burn the token.
    expect((await enroll({ csr_pem: await csrPem(), token: b.enrollment_token })).status).toBe(200);
  });

  it("refuses unknown and expired tokens (403), and answers 503 without a CA", async () => {
    const ws = await signupWorkspace();
    const c = await newConnector(ws.adminToken);
    await expectProblem(await enroll({ csr_pem: await csrPem(), token: "svc_enroll_unknown" }), 403);
    await expectProblem(await enroll({ csr_pem: await csrPem(), token: "anything" }), 403);
    await expectProblem(
      await enroll({ csr_pem: await csrPem(), token: c.enrollment_token }, {}),
      503,
      "enrollment_not_configured",
    );
    await env.DB.prepare("UPDATE mcp_connectors SET token_expires_at = ?2 WHERE id = ?1")
      .bind(c.connector_id, new Date(Date.now() - 1000).toISOString())
      .run();
    await expectProblem(await enroll({ csr_pem: await csrPem(), token: c.enrollment_token }), 403);
    expect(await auditEvents(ws.workspace.id, "mcp.connector.enroll")).toEqual([
      expect.objectContaining({
        outcome: "denied",
        details: { connector_id: c.connector_id, reason: "token_expired" },
      }),
    ]);
  });

  // spec: "403 (token missing, invalid, expired or already redeemed)"
  it("refuses a missing, empty, unknown or non-string token with 403, not 400; other bad fields stay 400", async () => {
    const ws = await signupWorkspace();
    const c = await newConnector(ws.adminToken);
    const csr = await csrPem();
    for (const body of [
      { csr_pem: csr },
      { csr_pem: csr, token: "" },
      { csr_pem: csr, token: "svc_enroll_nope" },
      { csr_pem: csr, token: 42 },
      { csr_pem: csr, token: null },
      { csr_pem: csr, token: `svc_enroll_${"x".repeat(300)}` },
      {}, // the token is the credential: it is checked before the other fields
      { csr_pem: 7 },
    ]) {
      const p = await expectProblem(await enroll(body), 403, "invalid_enrollment_token");
      expect(p.detail).toBe("The enrollment token is missing, invalid, expired or already redeemed");
    }
    await expectProblem(await enroll({ token: c.enrollment_token }), 400, "validation_failed");
    await expectProblem(await enroll({ csr_pem: 7, token: c.enrollment_token }), 400, "validation_failed");
    await expectProblem(
      await enroll({ csr_pem: csr, token: c.enrollment_token, extra: true }),
      400,
      "validation_failed",
    );
    // none of the refusals redeemed or touched the connector
    expect(await auditEvents(ws.workspace.id, "mcp.connector.enroll")).toEqual([]);
    expect((await enroll({ csr_pem: csr, token: c.enrollment_token })).status).toBe(200);
  });

  it("limits one address to 10 enrollment attempts a minute (429), other addresses unaffected", async () => {
    const headers = { "CF-Connecting-IP": "203.0.113.91" };
    const attempt = (h: Record<string, string> = headers) =>
      callWith(ca.config, "POST", "/v1/mcp/connectors/enroll", {
        body: { csr_pem: "not a csr", token: "svc_enroll_unknown" },
        headers: h,
      });
    for (let i = 0; i < 10; i++) expect((await attempt()).status).toBe(403);
    const limited = await attempt();
    await expectProblem(limited, 429);
    expect(limited.headers.get("Retry-After")).toBe("60");
    expect((await attempt({ "CF-Connecting-IP": "203.0.113.92" })).status).toBe(403);
  });

  it("gives one certificate to two concurrent redemptions of one token", async () => {
    const ws = await signupWorkspace();
    const c = await newConnector(ws.adminToken);
    const [x, y] = await Promise.all([
      enroll({ csr_pem: await csrPem(), token: c.enrollment_token }),
      enroll({ csr_pem: await csrPem(), token: c.enrollment_token }),
    ]);
    expect([x.status, y.status].sort()).toEqual([200, 403]);
    const events = await auditEvents(ws.workspace.id, "mcp.connector.enroll");
    expect(events.filter((e) => e.outcome === "success")).toHaveLength(1);
    expect(events.filter((e) => e.outcome === "denied")).toHaveLength(1);
  });
});
