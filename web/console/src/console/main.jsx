// The console: GraphiQL 5 over Lore's /graphql, with everything it needs in
// this bundle and its workers, so the page loads nothing from another host.
// Queries and mutations go over HTTP POST, subscriptions over a WebSocket
// (graphql-transport-ws), which is what gqlgen's handler speaks.

import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { createClient } from 'graphql-ws';
import { parse } from 'graphql';
import { createRoot } from 'react-dom/client';
// The Monaco build GraphiQL itself loads (the same module in this bundle).
import { editor } from 'monaco-graphql/esm/monaco-editor.js';
import 'graphiql/style.css';
import './console.css';
import { examples } from './examples.js';

// Monaco asks for a worker by label. build.mjs writes the three workers
// beside this bundle; module workers keep them in the same format.
const here = new URL('.', import.meta.url);
const workers = { json: 'json.worker.js', graphql: 'graphql.worker.js' };
globalThis.MonacoEnvironment = {
  getWorker: (_id, label) =>
    new Worker(new URL(workers[label] ?? 'editor.worker.js', here), { type: 'module', name: label }),
};

const config = JSON.parse(document.getElementById('console-config').textContent);
const http = new URL(config.endpoint, location.href);
const ws = new URL(http);
ws.protocol = http.protocol === 'https:' ? 'wss:' : 'ws:';

const toolkit = createGraphiQLFetcher({
  url: http.href,
  // A ready client, rather than subscriptionUrl, which would import
  // graphql-ws at run time.
  wsClient: createClient({ url: ws.href, lazy: true }),
});

// GraphiQL hands the fetcher the document it parsed last, after a debounce,
// and the toolkit picks WebSocket or HTTP by it. Running right after an edit
// or a tab switch could thus send a subscription as a POST (which answers
// with its first event only) or name an operation the text no longer has.
// Parsing the text that is actually sent removes the race.
function fetcher(params, opts) {
  let doc;
  try {
    doc = parse(params.query);
  } catch {
    return toolkit(params, opts); // the server reports the syntax error
  }
  const names = doc.definitions.filter((d) => d.kind === 'OperationDefinition').map((d) => d.name?.value);
  let operationName = params.operationName ?? undefined;
  if (!names.includes(operationName) && names.length === 1) {
    operationName = names[0];
  }
  return toolkit({ ...params, operationName }, { ...opts, documentAST: doc });
}

// Long lines wrap in every editor, so nothing is cut off at the pane's
// edge (or hidden behind the toolbar beside the operation editor).
editor.onDidCreateEditor((e) => e.updateOptions({ wordWrap: 'on', wrappingIndent: 'indent' }));

// On a phone the tab bar scrolls sideways: keep the open tab in sight, on
// the first render and after every switch.
function showActiveTab() {
  requestAnimationFrame(() =>
    document.querySelector('.graphiql-tab-active')?.scrollIntoView({ block: 'nearest', inline: 'nearest' }),
  );
}
const firstTabs = new MutationObserver(() => {
  if (document.querySelector('.graphiql-tab-active')) {
    firstTabs.disconnect();
    showActiveTab();
  }
});
firstTabs.observe(document.getElementById('graphiql'), { childList: true, subtree: true });

function Console() {
  return (
    <GraphiQL fetcher={fetcher} defaultTabs={examples} onTabChange={showActiveTab}>
      {/* index.html's header names the page and links back; no logo here. */}
      <GraphiQL.Logo>{null}</GraphiQL.Logo>
    </GraphiQL>
  );
}

createRoot(document.getElementById('graphiql')).render(<Console />);
