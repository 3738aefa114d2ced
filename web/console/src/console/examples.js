// The tabs a new console opens with: one question each about the example
// dataset that `lore serve` loads into a new store (Tessellate, a fictional
// company). GraphiQL names a tab after its operation and keeps the user's
// own tabs in localStorage, so these appear only on a first visit.

const billing = `# One node by ID: its properties, its edge
# counts, and through Node.neighbors the
# services it depends on and who owns it.
query Billing {
  getNode(id: "service/billing") {
    node {
      id
      type
      revision
      properties
      edgeCounts { label direction count }
      dependsOn: neighbors(edge: ["dependsOn"], direction: out) {
        node { id properties }
      }
      ownedBy: neighbors(edge: ["owns"], direction: in) {
        node { id properties }
      }
    }
  }
}
`;

const search = `# Ranked text search: every word must match,
# the last one as a prefix.
query Search($text: String!) {
  searchNodes(query: $text, limit: 5) {
    hits {
      score
      node { id type properties }
    }
    truncated
  }
}
`;

const chain = `# Two hops down the dependsOn chain from
# checkout, in one request.
query CheckoutDependencies {
  getNode(id: "service/checkout") {
    node {
      id
      dependsOn: neighbors(edge: ["dependsOn"], direction: out) {
        node {
          id
          dependsOn: neighbors(edge: ["dependsOn"], direction: out) {
            node { id }
          }
        }
      }
    }
  }
}
`;

const path = `# How is Ada Okafor connected to the billing service?
query AdaToBilling {
  findPaths(from: "person/ada-okafor", to: "service/billing") {
    paths { nodes edges }
    length
  }
}
`;

const tier0 = `# A bounded graph query: start at the tier-0
# services, step back along owns, and return
# the teams found there.
query Tier0Owners {
  queryGraph(
    from: {type: "Service", where: {tier: 0}}
    traverse: [{edge: "owns", direction: in}]
    return: {fields: ["id", "name"]}
  ) {
    nodes
    truncated
  }
}
`;

const superseded = `# Architecture decisions that a later one
# replaced.
query SupersededDecisions {
  queryGraph(
    from: {type: "Decision", where: {status: "superseded"}}
    return: {fields: ["id", "title", "status", "date"]}
    orderBy: [{field: "date"}]
  ) {
    nodes
  }
}
`;

const watch = `# Follows one node over a WebSocket: first its
# past changes (since: 0), then each new one,
# until you press stop. Try it: change billing
# from an agent over MCP, or over REST:
#   curl -d '{"nodes":[{"id":"service/billing",
#     "type":"Service","merge":true,"properties":
#     {"lifecycle":"deprecated"}}]}' \\
#     http://${location.host}/api/v1/tools/upsert_nodes
subscription WatchBilling {
  nodeChanged(id: "service/billing", since: 0) {
    change { seq op time }
    node { revision updatedAt properties }
  }
}
`;

export const examples = [
  { query: billing },
  { query: search, variables: '{\n  "text": "ledger"\n}' },
  { query: chain },
  { query: path },
  { query: tier0 },
  { query: superseded },
  { query: watch },
];
