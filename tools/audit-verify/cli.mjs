#!/usr/bin/env node
// Verifies a workspace's audit log without trusting the service (see verify.mjs):
//
//   npm run audit:verify -- --url http://localhost:8787 --token svc_pat_… [--saved cp.txt] [--save cp.txt]
//
// Exit 0: everything verified; 1: a check failed (each finding on stderr); 2: usage or network error.
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { verifyAuditLog } from "./verify.mjs";

const USAGE = `usage: npm run audit:verify -- --url <service origin> --token <admin token> [--saved <file>] [--save <file>]
   or: node tools/audit-verify/cli.mjs …   (the token may instead be in AUDIT_VERIFY_TOKEN)

Fetches the service's audit log key, the workspace's latest signed checkpoint, every event with
its leaf bytes and its inclusion proof, and verifies: the checkpoint's Ed25519 signature under
the log key, that each event's leaf hashes to its hash, encodes its fields and links to the
event before it, that every event is in the checkpoint's tree (RFC 9162), and that the log
extends the checkpoint saved earlier (RFC 9162 consistency proof).

  --url <origin>    the service, e.g. http://localhost:8787
  --token <token>   a workspace admin's token (or set AUDIT_VERIFY_TOKEN)
  --key <key>       the log key as published (<name>+<key id>+<base64>); default: the one the service serves
  --saved <file>    a checkpoint saved by an earlier run: the log must extend it
  --save <file>     where to write this run's checkpoint once everything verified
  --quiet           print nothing but findings
  -h, --help        this text

Exit status: 0 verified, 1 a check failed, 2 usage or network error.`;

let args;
try {
  args = parseArgs({
    options: {
      url: { type: "string" },
      token: { type: "string" },
      key: { type: "string" },
      saved: { type: "string" },
      save: { type: "string" },
      quiet: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }).values;
} catch (e) {
  console.error(`${e.message}\n\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const token = args.token ?? process.env.AUDIT_VERIFY_TOKEN;
if (!args.url || !token) {
  console.error(`--url and --token are required\n\n${USAGE}`);
  process.exit(2);
}

try {
  const saved = args.saved ? readFileSync(args.saved, "utf8") : null;
  const result = await verifyAuditLog({
    url: args.url,
    token,
    key: args.key,
    saved,
    progress: args.quiet ? undefined : (m) => console.log(m),
  });
  if (!result.ok) {
    for (const error of result.errors) console.error(`FAIL ${error}`);
    console.error(`audit log NOT verified: ${result.errors.length} finding(s)`);
    process.exit(1);
  }
  if (args.save && result.checkpoint) writeFileSync(args.save, result.checkpoint);
  if (!args.quiet) console.log(`audit log verified: ${result.origin}, ${result.size} events`);
} catch (e) {
  console.error(`audit-verify: ${e.message}`);
  process.exit(2);
}
