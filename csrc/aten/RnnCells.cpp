// The fused LSTM and GRU cells that ATen's nn.LSTM / nn.GRU call for
// accelerator tensors (CUDA, XPU and PrivateUse1 alike), forward and
// backward. CPU has no kernels for them: CPU's RNNs use unfused cells. Each
// runs as one kernel on the stream, computing with ATen's CPU operators.
//
// The workspace a forward pass saves for its backward is foo's own layout
// (only these kernels read it): LSTM [i, f, g, o] after their activations;
// GRU [r, z, n, hx, hidden n gate] (z is what PyTorch's docs call the
// update gate).
// Tensor arithmetic with operators reads best for these formulas.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/Structured.h"

namespace foo::aten {
namespace {

using Optional = KernelArgument<const std::optional<at::Tensor>&>;

bool present(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// input_gates + hidden_gates (+ both biases): the pre-activation gates.
at::Tensor gate_sum(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  at::Tensor gates = input_gates + hidden_gates;
  if (present(input_bias)) gates = gates + *input_bias;
  if (present(hidden_bias)) gates = gates + *hidden_bias;
  return gates;
}

void check_cell(const char* name, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                const at::Tensor& state, const std::optional<at::Tensor>& input_bias,
                const std::optional<at::Tensor>& hidden_bias, int64_t gate_count) {
  c10::Device device = input_gates.device();
  for (const at::Tensor* t : {&hidden_gates, &state}) check_same_device(device, *t, name);
  check_argument<DeviceCheck::ExactSame>(device, input_bias, name);
  check_argument<DeviceCheck::ExactSame>(device, hidden_bias, name);
  TORCH_CHECK(input_gates.dim() == 2 && state.dim() == 2, name, ": expected 2-D gates and state, got ",
              input_gates.sizes(), " and ", state.sizes());
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), name, ": input_gates ", input_gates.sizes(),
              " and hidden_gates ", hidden_gates.sizes(), " differ in size");
  TORCH_CHECK(input_gates.size(0) == state.size(0) && input_gates.size(1) == gate_count * state.size(1), name,
              ": gates ", input_gates.sizes(), " do not match a state of size ", state.sizes());
  TORCH_CHECK(present(input_bias) == present(hidden_bias), name, ": give both biases or neither");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input_gates,
                                                         const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                         const std::optional<at::Tensor>& input_bias,
                                                         const std::optional<at::Tensor>& hidden_bias) {
  const char* name = "aten::_thnn_fused_lstm_cell";
  check_cell(name, input_gates, hidden_gates, cx, input_bias, hidden_bias, 4);
  at::Tensor hy = at::empty(cx.sizes(), cx.options());
  at::Tensor cy = at::empty(cx.sizes(), cx.options());
  at::Tensor workspace = at::empty(input_gates.sizes(), input_gates.options());
  launch_into(cx.device(), name, {hy, cy, workspace},
              [ig = TensorInfo(input_gates), hg = TensorInfo(hidden_gates), c = TensorInfo(cx),
               ib = Optional::pack(input_bias), hb = Optional::pack(hidden_bias)] {
                auto chunks = gate_sum(ig.cpu(), hg.cpu(), Optional::unpack(ib), Optional::unpack(hb)).chunk(4, 1);
                at::Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid();
                at::Tensor g = chunks[2].tanh(), o = chunks[3].sigmoid();
                at::Tensor c_next = f * c.cpu() + i * g;
                return std::vector<at::Tensor>{o * c_next.tanh(), c_next, at::cat({i, f, g, o}, 1)};
              });
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(const std::optional<at::Tensor>& grad_hy,
                                                                  const std::optional<at::Tensor>& grad_cy,
                                                                  const at::Tensor& cx, const at::Tensor& cy,
                                                                  const at::Tensor& workspace, bool has_bias) {
  const char* name = "aten::_thnn_fused_lstm_cell_backward_impl";
  if (!present(grad_hy) && !present(grad_cy)) return {};
  c10::Device device = workspace.device();
  for (const at::Tensor* t : {&cx, &cy}) check_same_device(device, *t, name);
  check_argument<DeviceCheck::ExactSame>(device, grad_hy, name);
  check_argument<DeviceCheck::ExactSame>(device, grad_cy, name);
  at::Tensor grad_gates = at::empty(workspace.sizes(), workspace.options());
  at::Tensor grad_cx = at::empty(cx.sizes(), cx.options());
  at::Tensor grad_bias = has_bias ? at::empty({workspace.size(1)}, workspace.options()) : at::Tensor();
  launch_into(device, name, {grad_gates, grad_cx, grad_bias},
              [ghy = Optional::pack(grad_hy), gcy = Optional::pack(grad_cy), c = TensorInfo(cx),
               c_next = TensorInfo(cy), ws = TensorInfo(workspace), has_bias] {
                auto chunks = ws.cpu().chunk(4, 1);
                const at::Tensor &i = chunks[0], &f = chunks[1], &g = chunks[2], &o = chunks[3];
                at::Tensor tanh_cy = c_next.cpu().tanh();
                auto given_hy = Optional::unpack(ghy), given_cy = Optional::unpack(gcy);
                at::Tensor d_hy = present(given_hy) ? *given_hy : at::zeros_like(tanh_cy);
                at::Tensor d_cy = d_hy * o * (1 - tanh_cy * tanh_cy);
                if (present(given_cy)) d_cy = d_cy + *given_cy;
                at::Tensor d_gates = at::cat({d_cy * g * i * (1 - i), d_cy * c.cpu() * f * (1 - f),
                                              d_cy * i * (1 - g * g), d_hy * tanh_cy * o * (1 - o)},
                                             1);
                return std::vector<at::Tensor>{d_gates, d_cy * f, has_bias ? d_gates.sum(0) : at::Tensor()};
              });
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                            const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                            const std::optional<at::Tensor>& hidden_bias) {
  const char* name = "aten::_thnn_fused_gru_cell";
  check_cell(name, input_gates, hidden_gates, hx, input_bias, hidden_bias, 3);
  at::Tensor hy = at::empty(hx.sizes(), hx.options());
  at::Tensor workspace = at::empty({hx.size(0), 5 * hx.size(1)}, hx.options());
  launch_into(hx.device(), name, {hy, workspace},
              [ig = TensorInfo(input_gates), hg = TensorInfo(hidden_gates), h = TensorInfo(hx),
               ib = Optional::pack(input_bias), hb = Optional::pack(hidden_bias)] {
                auto in_bias = Optional::unpack(ib), hid_bias = Optional::unpack(hb);
                at::Tensor in_gates = present(in_bias) ? ig.cpu() + *in_bias : ig.cpu();
                at::Tensor hid_gates = present(hid_bias) ? hg.cpu() + *hid_bias : hg.cpu();
                auto ic = in_gates.chunk(3, 1), hc = hid_gates.chunk(3, 1);
                at::Tensor r = (ic[0] + hc[0]).sigmoid(), z = (ic[1] + hc[1]).sigmoid();
                at::Tensor n = (ic[2] + r * hc[2]).tanh();
                at::Tensor h_prev = h.cpu();
                return std::vector<at::Tensor>{n + z * (h_prev - n), at::cat({r, z, n, h_prev, hc[2]}, 1)};
              });
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const char* name = "aten::_thnn_fused_gru_cell_backward";
  check_same_device(workspace.device(), grad_hy, name);
  int64_t hidden = grad_hy.size(1);
  auto gates_options = workspace.options();
  at::Tensor grad_input_gates = at::empty({grad_hy.size(0), 3 * hidden}, gates_options);
  at::Tensor grad_hidden_gates = at::empty({grad_hy.size(0), 3 * hidden}, gates_options);
  at::Tensor grad_hx = at::empty(grad_hy.sizes(), grad_hy.options());
  at::Tensor grad_input_bias = has_bias ? at::empty({3 * hidden}, gates_options) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? at::empty({3 * hidden}, gates_options) : at::Tensor();
  launch_into(workspace.device(), name, {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias},
              [ghy = TensorInfo(grad_hy), ws = TensorInfo(workspace), has_bias] {
                auto parts = ws.cpu().chunk(5, 1);
                const at::Tensor &r = parts[0], &z = parts[1], &n = parts[2], &h_prev = parts[3], &hn = parts[4];
                at::Tensor d_hy = ghy.cpu();
                at::Tensor d_z = d_hy * (h_prev - n) * z * (1 - z);
                at::Tensor d_n = d_hy * (1 - z) * (1 - n * n);
                at::Tensor d_r = d_n * hn * r * (1 - r);
                at::Tensor d_in = at::cat({d_r, d_z, d_n}, 1);
                at::Tensor d_hid = at::cat({d_r, d_z, d_n * r}, 1);
                return std::vector<at::Tensor>{d_in, d_hid, d_hy * z, has_bias ? d_in.sum(0) : at::Tensor(),
                                               has_bias ? d_hid.sum(0) : at::Tensor()};
              });
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace
}  // namespace foo::aten
