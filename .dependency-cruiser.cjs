module.exports = {
  forbidden: [{ name: "no-cycles", severity: "error", from: {}, to: { circular: true } }],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
  },
};
