// Marks each build's module format for Node and TypeScript: dist/cjs/package.json says
// "commonjs" and dist/esm/package.json "module", so each directory's .js and .d.ts files are
// read as what they are, whatever the package's own "type" says. Run by the `prepare` script
// after both builds.
import { writeFileSync } from "node:fs";

for (const [dir, type] of [["dist/cjs", "commonjs"], ["dist/esm", "module"]]) {
  writeFileSync(`${dir}/package.json`, `${JSON.stringify({ type })}\n`);
}
