// Node module hooks that load TypeScript files through esbuild (types stripped, not checked), so
// a TypeScript partner's tests run with plain `node --test` on Node 20:
//   node --import @aiphost/sdk/register-ts --test
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !/\.(ts|mts)$/.test(url)) return nextLoad(url, context);
  const { transform } = await import("esbuild");
  const path = fileURLToPath(url);
  const { code } = await transform(await readFile(path, "utf8"), {
    loader: "ts",
    format: "esm",
    sourcefile: path,
    sourcemap: "inline",
  });
  return { format: "module", source: code, shortCircuit: true };
}
