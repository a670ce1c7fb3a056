#include "graph.h"

#include <algorithm>
#include <cstdio>

namespace foo_sim {

ReplayPlan make_replay_plan(const GraphData& g) {
  ReplayPlan plan;
  size_t lanes = std::max<size_t>(g.lane_streams.size(), 1);
  plan.lanes.resize(lanes);
  plan.signalled.assign(g.nodes.size(), false);
  // awaited[l][m]: how far into lane m lane l is already known to wait
  // (nodes of a lane run in order, so awaiting one covers those before it).
  std::vector<std::vector<long>> awaited(lanes, std::vector<long>(lanes, -1));
  auto await = [&](size_t lane, NodeId d) {
    size_t from = static_cast<size_t>(g.nodes[d].lane);
    if (from == lane || awaited[lane][from] >= static_cast<long>(d)) return;
    awaited[lane][from] = d;
    plan.signalled[d] = true;
    plan.lanes[lane].push_back({ReplayStep::Kind::Await, d, {}});
  };
  // Steps go in capture order on every lane, and a node depends only on
  // nodes captured before it, so no lane can await a step that sits behind
  // one of its own awaits: the plan cannot deadlock.
  for (NodeId n = 0; n < g.nodes.size(); ++n) {
    size_t lane = static_cast<size_t>(g.nodes[n].lane);
    for (NodeId d : g.nodes[n].deps) await(lane, d);
    std::vector<ReplayStep>& steps = plan.lanes[lane];
    if (!steps.empty() && steps.back().kind == ReplayStep::Kind::Run) {
      steps.back().batch.push_back(n);
    } else {
      steps.push_back({ReplayStep::Kind::Run, n, {n}});
    }
  }
  for (NodeId d : g.sinks) await(0, d);
  // A signal goes right after the node it announces, now that all are
  // known; it splits the batch that node is in.
  for (auto& steps : plan.lanes) {
    std::vector<ReplayStep> split;
    for (const ReplayStep& s : steps) {
      if (s.kind != ReplayStep::Kind::Run) {
        split.push_back(s);
        continue;
      }
      ReplayStep run{ReplayStep::Kind::Run, s.batch.front(), {}};
      for (NodeId n : s.batch) {
        run.batch.push_back(n);
        if (!plan.signalled[n]) continue;
        split.push_back(run);
        split.push_back({ReplayStep::Kind::Signal, n, {}});
        run.batch.clear();
      }
      if (!run.batch.empty()) {
        run.node = run.batch.front();
        split.push_back(run);
      }
    }
    for (ReplayStep& s : split) {
      if (s.kind == ReplayStep::Kind::Run) s.node = s.batch.front();
    }
    steps.swap(split);
  }
  return plan;
}

std::vector<bool> ancestors(const GraphData& g, const std::vector<NodeId>& from) {
  std::vector<bool> seen(g.nodes.size(), false);
  std::vector<NodeId> todo(from.begin(), from.end());
  while (!todo.empty()) {
    NodeId n = todo.back();
    todo.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    for (NodeId d : g.nodes[n].deps) todo.push_back(d);
  }
  return seen;
}

namespace {

const char* kind_name(fooActivityKind k) {
  switch (k) {
    case fooActivityKindMemcpy: return "memcpy";
    case fooActivityKindMemset: return "memset";
    default: return "kernel";
  }
}

std::string escape(const char* text) {
  std::string out;
  for (const char* p = text; *p; ++p) {
    if (*p == '"' || *p == '\\') out += '\\';
    out += *p;
  }
  return out;
}

}  // namespace

std::string graph_to_dot(const GraphData& g) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "digraph foo_graph {\n  label=\"foo graph: device %d, capture %llu, %zu nodes, %zu streams\";\n",
                g.device, g.capture_id, g.nodes.size(), g.lane_streams.size());
  out += line;
  for (size_t l = 0; l < g.lane_streams.size(); ++l) {
    std::snprintf(line, sizeof(line), "  // stream %zu: %p%s\n", l, g.lane_streams[l],
                  l == 0 ? " (origin: the capture began and ended on it)" : " (forked)");
    out += line;
  }
  for (NodeId n = 0; n < g.nodes.size(); ++n) {
    const GraphNode& node = g.nodes[n];
    std::string what = node.name ? escape(node.name) : std::string(node.work ? "runtime work" : "host function");
    std::snprintf(line, sizeof(line), "  n%u [shape=box label=\"%u: %s %s", n, n, kind_name(node.kind), what.c_str());
    out += line;
    if (node.bytes > 0) {
      std::snprintf(line, sizeof(line), " (%llu bytes)", static_cast<unsigned long long>(node.bytes));
      out += line;
    }
    std::snprintf(line, sizeof(line), "\\nstream %d (%p)\"];\n", node.lane, g.lane_streams[node.lane]);
    out += line;
  }
  for (NodeId n = 0; n < g.nodes.size(); ++n) {
    for (NodeId d : g.nodes[n].deps) {
      bool cross = g.nodes[d].lane != g.nodes[n].lane;
      std::snprintf(line, sizeof(line), "  n%u -> n%u%s;\n", d, n, cross ? " [style=dashed label=\"cross-stream\"]" : "");
      out += line;
    }
  }
  out += "}\n";
  return out;
}

}  // namespace foo_sim
