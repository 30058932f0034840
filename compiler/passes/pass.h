// compiler/passes/pass.h — the graph pass interface.
//
// A Pass transforms an ir::Graph in place and reports failure as a Status whose
// message names the node at fault. Passes are stateless between runs except for
// their construction-time options, and leave the graph verifiable
// (Graph::Verify(false)) when they succeed.
//
// Thread-safety: a Pass object is used by one thread at a time.
#pragma once

#include <string>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable name used by keelc --passes, --disable-pass=NAME and --dump-ir=after-NAME.
  virtual std::string name() const = 0;
  // One line for listings.
  virtual std::string description() const = 0;
  virtual Status Run(ir::Graph& graph) = 0;
};

}  // namespace keel::passes
