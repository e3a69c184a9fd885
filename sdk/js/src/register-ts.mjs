// `node --import @aiphost/sdk/register-ts`: load .ts modules through esbuild (see ts-hooks.mjs).
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
