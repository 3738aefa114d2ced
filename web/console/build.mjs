// Builds dist/, which package web embeds, from src/ and the packages that
// package-lock.json pins: run by `make web` after `npm ci`. The output
// depends on nothing else (no dates, no absolute paths), so two builds are
// byte for byte the same and CI can diff a rebuild against the commit.
//
//   dist/console/  GraphiQL (graphiql.js, graphiql.css) and Monaco's workers
//   dist/explore/  the graph explorer (cytoscape.js)
//   dist/assets/   what the landing page and the explorer share
//   dist/manifest.json  the hash of every source and every output file, so
//                       `go test` notices a stale or hand-edited bundle
//                       without Node

import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const started = performance.now();

const common = {
  absWorkingDir: root,
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  legalComments: 'none',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
};

// graphiql/style.css already holds Monaco's CSS, codicon font included;
// the CSS files that monaco-editor's modules import would add a second copy.
const dropMonacoCSS = {
  name: 'drop-monaco-css',
  setup(build) {
    build.onLoad({ filter: /[\\/]monaco-editor[\\/].*\.css$/ }, () => ({ contents: '', loader: 'css' }));
  },
};

await rm(dist, { recursive: true, force: true });

await esbuild.build({
  ...common,
  entryPoints: { graphiql: 'src/console/main.jsx' },
  outdir: 'dist/console',
  jsx: 'automatic',
  plugins: [dropMonacoCSS],
});
await esbuild.build({
  ...common,
  entryPoints: {
    'editor.worker': 'monaco-editor/esm/vs/editor/editor.worker.js',
    'json.worker': 'monaco-editor/esm/vs/language/json/json.worker.js',
    'graphql.worker': 'monaco-graphql/esm/graphql.worker.js',
  },
  outdir: 'dist/console',
});
await esbuild.build({
  ...common,
  entryPoints: { explore: 'src/explore/main.js' },
  outdir: 'dist/explore',
});

for (const [from, to] of [
  ['src/console/index.html', 'console/index.html'],
  ['src/explore/index.html', 'explore/index.html'],
  ['src/assets/site.css', 'assets/site.css'],
  ['src/assets/favicon.svg', 'assets/favicon.svg'],
]) {
  await mkdir(dirname(join(dist, to)), { recursive: true });
  await copyFile(join(root, from), join(dist, to));
}

// The manifest: sorted paths, so its bytes are as reproducible as the rest.
const sha256 = (data) => createHash('sha256').update(data).digest('hex');
async function files(dir, prefix = '') {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix + e.name;
    if (e.isDirectory()) out.push(...(await files(join(dir, e.name), rel + '/')));
    else out.push(rel);
  }
  return out.sort();
}
const sources = {};
for (const f of ['build.mjs', 'package.json', 'package-lock.json', ...(await files(join(root, 'src'), 'src/'))].sort()) {
  sources[f] = sha256(await readFile(join(root, f)));
}
const outputs = {};
let raw = 0;
let gz = 0;
for (const f of await files(dist)) {
  const data = await readFile(join(dist, f));
  const zipped = gzipSync(data, { level: 9 }).length;
  outputs[f] = { size: data.length, sha256: sha256(data) };
  raw += data.length;
  gz += zipped;
  console.log(`${f.padEnd(30)} ${String(data.length).padStart(10)} ${String(zipped).padStart(10)} gzip`);
}
await writeFile(join(dist, 'manifest.json'), JSON.stringify({ sources, outputs }, null, 1) + '\n');
console.log(`${'total'.padEnd(30)} ${String(raw).padStart(10)} ${String(gz).padStart(10)} gzip`);
console.log(`built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
