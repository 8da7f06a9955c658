// ef:<inner>: error feedback (1-bit SGD, Seide et al. 2014; memory/EF-SGD, Stich et al. 2018,
// Karimireddy et al. 2019). The sender keeps the residual e of what compression dropped:
//   u = v + e;  send Q(u);  e <- u - Q(u)
// so the sum of everything decoded plus the final residual equals the sum of the inputs (up to
// round-off): nothing is lost, only delayed. Decoding is the inner codec's.
//
// The inner codec should be a contraction (E|Q(u)-u|^2 < |u|^2: top-k, sign, rand-k unscaled,
// fine quantisers): with a coarse unbiased one such as qsgd:2 (omega = sqrt(d)) the residual
// grows without bound, as the EF analyses predict.
//
// e is updated in place: e += v, encode e, then e += -1 * Q(e) through the inner DecodeAdd, so
// no scratch beyond the residual itself. A non-finite input poisons e, and every later message
// decodes to NaN (divergence is reported, not hidden).
#include <corral/error.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/src/compress/codecs.h"

namespace corral::internal::compress {
namespace {

class ErrorFeedbackCompressor final : public Compressor {
 public:
  ErrorFeedbackCompressor(std::unique_ptr<Compressor> inner, std::size_t dim)
      : inner_(std::move(inner)), spec_("ef:" + std::string(inner_->spec())), residual_(dim) {}

  std::string_view spec() const override { return spec_; }
  bool unbiased() const override { return false; }  // messages carry delayed residuals
  // The inner codec's delta (for an unbiased inner codec, that of its rescaled operator).
  double Delta(std::size_t d) const override { return inner_->Delta(d); }
  std::size_t WireBytes(std::size_t d) const override { return inner_->WireBytes(d); }

  // \pre v.size() == dim (the residual is per coordinate).
  std::size_t Encode(std::span<const float> v, std::span<std::byte> out, Rng& rng) override {
    if (v.size() != residual_.size()) {
      throw Error(ErrorCode::kBadConfig, "compressor '" + spec_ + "' keeps a residual of length " +
                                             std::to_string(residual_.size()) +
                                             " but got a vector of length " +
                                             std::to_string(v.size()));
    }
    // Checked here too so that a failed Encode leaves the residual untouched.
    CheckEncode(spec_, v.size(), residual_.size(), out.size(), WireBytes(v.size()));
    float* e = residual_.data();
    for (std::size_t i = 0; i < v.size(); ++i) e[i] += v[i];
    const std::size_t bytes = inner_->Encode(residual_, out, rng);
    inner_->DecodeAdd(out.first(bytes), -1.0f, residual_);
    return bytes;
  }
  void Decode(std::span<const std::byte> in, std::span<float> out) const override {
    inner_->Decode(in, out);
  }
  void DecodeAdd(std::span<const std::byte> in, float scale, std::span<float> acc) const override {
    inner_->DecodeAdd(in, scale, acc);
  }

  std::span<const float> residual() const { return residual_; }
  std::span<float> State() override { return residual_; }

 private:
  std::unique_ptr<Compressor> inner_;
  std::string spec_;
  std::vector<float> residual_;  // e, one float per coordinate
};

}  // namespace

std::span<const float> Residual(const Compressor& compressor) {
  const auto* ef = dynamic_cast<const ErrorFeedbackCompressor*>(&compressor);
  return ef != nullptr ? ef->residual() : std::span<const float>();
}

std::unique_ptr<Compressor> MakeErrorFeedback(std::unique_ptr<Compressor> inner, std::size_t dim) {
  return std::make_unique<ErrorFeedbackCompressor>(std::move(inner), dim);
}

}  // namespace corral::internal::compress
