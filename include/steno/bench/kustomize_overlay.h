// An autoscale plan as a Kustomize overlay (YAML text) over deploy/'s KEDA overlay: its replica floor and ceiling
// and queue-time target patched into the Deployment and the ScaledObject, the arithmetic above them as comments.
#pragma once

#include <string>
#include <vector>

#include "steno/bench/autoscale_plan.h"

namespace steno::bench {

struct OverlayTarget {
  std::string resources = "../keda";  // the kustomization patched, relative to the overlay's directory
  std::string name = "steno";         // its Deployment's and ScaledObject's name
};

// `comments`: lines printed above the YAML as `# ...` (the plan's arithmetic). The patches are JSON patches with
// `replace`, so that rendering fails, rather than adds fields, if the base stops having them.
std::string kustomize_autoscale_overlay(const AutoscalePlan& plan, const OverlayTarget& target,
                                        const std::vector<std::string>& comments);

}  // namespace steno::bench
