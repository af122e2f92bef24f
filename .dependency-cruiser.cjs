// The architecture, as rules that `npm test` checks. Layers, bottom to top:
//
//   platform, db          env, D1 access, problems, ids, crypto; db/schema.ts gathers every table
//   <area>/tables.ts      an area's D1 tables: they import only other tables files
//   audit                 the audit events' catalogue, its two verbs and their delivery
//   auth                  who is calling: credentials → caller, scopes, roles
//   identity              the one owner of users, sessions and personal access tokens
//   http                  the route contract: apiRoute, guards, errors, the Area type, callerEvent(c, …)
//   llm                   the language and image models, their errors, the system prompt
//   runtime               an agent's turn: history, credits, the model loop over the areas' tools
//   areas                 one folder per area of the API (account, agents, oauth, ...)
//   app.ts, index.ts      the only places that list the areas
//
// Durable Objects (durable-objects/) stand beside the Worker: they use platform, db and the
// audit verbs, and the Worker uses them (their clients and types).
// Every other folder of src/ is an area (its name is captured as $1).
const AREAS = "(?!(?:platform|db|auth|identity|audit|http|llm|runtime)/)([^/]+)";
const TABLES = "^src/[^/]+/tables\\.ts$";

module.exports = {
  forbidden: [
    { name: "no-cycles", severity: "error", from: {}, to: { circular: true } },
    {
      name: "no-folder-cycles",
      comment: "two folders never import each other, even through different files",
      severity: "error",
      scope: "folder",
      from: {},
      to: { circular: true },
    },
    {
      name: "platform-knows-no-one",
      comment:
        "platform and db are the bottom: no auth, no route contract, no area (nor db/schema, which re-exports the areas), no object",
      severity: "error",
      from: { path: "^src/(platform|db)/" },
      to: { path: "^(src/(?!platform/|db/)|durable-objects/|src/db/schema\\.ts$)" },
    },
    {
      name: "tables-know-only-tables",
      comment: "a tables file is the bottom layer wherever it lives: it references other tables files only",
      severity: "error",
      from: { path: TABLES },
      to: { path: "^(src|durable-objects)/", pathNot: `${TABLES}|^src/db/columns\\.ts$` },
    },
    {
      name: "tables-through-the-schema",
      comment: "code reads tables from src/db/schema, never from an area's tables file (only tables files do)",
      severity: "error",
      from: { path: "^(src|durable-objects)/", pathNot: TABLES },
      to: { path: TABLES },
    },
    {
      name: "auth-knows-tables-and-platform",
      severity: "error",
      from: { path: "^src/auth/" },
      to: { path: "^(src/(?!platform/|db/|auth/)|durable-objects/)" },
    },
    {
      name: "identity-below-the-routes",
      severity: "error",
      from: { path: "^src/identity/", pathNot: TABLES },
      to: { path: "^(src/(?!platform/|db/|audit/|auth/|identity/)|durable-objects/)" },
    },
    {
      name: "audit-below-everything-that-records",
      comment:
        "the audit verbs know tables, platform and the audit object's client and types, never a caller or an area",
      severity: "error",
      from: { path: "^src/audit/" },
      to: { path: "^(src/(?!platform/|db/|audit/)|durable-objects/(?!audit-log/(client|types)\\.ts$))" },
    },
    {
      name: "contract-knows-no-area",
      comment: "the route contract sits above auth and audit, below every area",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: `^src/${AREAS}/` },
    },
    {
      name: "llm-names-no-area",
      comment: "the model layer knows platform only: areas hand it what it needs",
      severity: "error",
      from: { path: "^src/llm/" },
      to: { path: "^(src/(?!platform/|llm/)|durable-objects/)" },
    },
    {
      name: "runtime-names-no-area",
      comment: "the turn runs the tools the areas provide (platform/turn-tools) and never imports an area",
      severity: "error",
      from: { path: "^src/runtime/" },
      to: { path: "^(src/(?!platform/|llm/|runtime/)|durable-objects/)" },
    },
    {
      name: "objects-stay-in-their-folder",
      comment: "Durable Objects import only durable-objects/, platform, the table definitions and the audit verbs",
      severity: "error",
      from: { path: "^durable-objects/" },
      to: { path: "^src/(?!platform/|db/|audit/events\\.ts$)" },
    },
    {
      name: "no-other-areas-routes",
      comment: "an area may call another area's services, never its routes (or its area module)",
      severity: "error",
      from: { path: `^src/${AREAS}/` },
      to: { path: `^src/${AREAS}/(.*routes.*|index\\.ts)$`, pathNot: "^src/$1/" },
    },
    {
      name: "objects-load-their-work-on-use",
      comment:
        "the Worker exports the Durable Object classes, so what their modules import at module scope runs at every isolate's startup: the room's turn code (the AI SDK with it) and the browser protocol's schemas load with import() when an object first needs them",
      severity: "error",
      from: { path: "^(src/conversations/room/object|durable-objects/browser-session)\\.ts$" },
      to: {
        path: "^src/conversations/room/(turn|intake|resumption|approval-[a-z]+)\\.ts$|^durable-objects/protocol\\.ts$|node_modules/ai/",
        dynamic: false,
        dependencyTypesNot: ["type-only", "type-import"],
      },
    },
    {
      name: "only-app-lists-areas",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(app|index)\\.ts$" },
      to: { path: `^src/${AREAS}/index\\.ts$`, pathNot: "^src/$1/" },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    // src/db/schema.ts only re-exports the areas' tables files: followed, it would make every
    // folder that reads a table depend on every area. The tables files are checked themselves.
    doNotFollow: { path: ["node_modules", "^src/db/schema\\.ts$"] },
    exclude: { path: "^durable-objects/audit-log/migrations/" },
  },
};
