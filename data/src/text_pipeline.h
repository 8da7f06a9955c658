// ParseTextChunks: the parallel skeleton every text format shares.
//
// A serial stage reads the source in chunks that end on a line boundary and numbers their
// first lines; a parallel stage parses each chunk on its own (oneTBB parallel_pipeline); a
// serial in-order stage hands the results, in file order, to the format's `consume`, which
// appends them to the final arrays. At most threads + 1 chunks are alive at once, each a text
// buffer and its parsed result, so the text and the parsed data are never both held beyond
// about one chunk per thread.
//
// Errors are deterministic: a parse failure is recorded in its chunk and raised by the
// in-order stage, which alone knows where the chunk starts in the file, so the first bad line
// is reported with its true line number whatever the thread count or chunk size. Line
// numbers cost nothing serial: each parse task counts its own chunk's lines.
//
// Thread safety: `parse` runs concurrently on different chunks and must only read shared
// state; `consume` runs on one chunk at a time, in file order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <corral/error.h>

#include "data/src/byte_source.h"
#include "data/src/mapped_buffer.h"

namespace corral::detail {

// Thrown by a format's parse or consume: `line` counts the chunk's lines from 1 (the
// pipeline turns it into the file's line), `what` is the rest of the message ("column 7:
// expected ..., got ...").
struct ParseFailure {
  std::uint64_t line;
  std::string what;
};

struct TextChunk {
  MappedBuffer buffer;    // its size() is the capacity; huge pages when large
  std::size_t size = 0;   // bytes of text
  std::size_t index = 0;  // 0 for the chunk that starts the source
  bool starts_file = false;  // its line 1 is the file's line 1 (a header or byte order mark may be there)

  char* bytes() { return buffer.data(); }
  std::string_view text() const { return {buffer.data(), size}; }
};

// Calls `fn(line, number)` for every line of the chunk, numbered from 1 within the chunk,
// '\n' removed ('\r' is the format's business). A final line without '\n' counts too.
// Returns the number of '\n' seen, which the pipeline needs to number the next chunk.
template <typename Fn>
std::uint64_t ForEachLine(const TextChunk& chunk, Fn&& fn) {
  std::string_view rest = chunk.text();
  std::uint64_t newlines = 0;
  while (!rest.empty()) {
    const void* nl = std::memchr(rest.data(), '\n', rest.size());
    const std::size_t length =
        nl == nullptr ? rest.size() : static_cast<std::size_t>(static_cast<const char*>(nl) - rest.data());
    fn(rest.substr(0, length), newlines + 1);
    if (nl != nullptr) ++newlines;
    rest.remove_prefix(std::min(rest.size(), length + 1));
  }
  return newlines;
}

// Newlines in `text`, by memchr (vectorised in glibc) rather than a byte loop.
inline std::uint64_t CountLines(std::string_view text) {
  std::uint64_t count = 0;
  const char* at = text.data();
  const char* end = at + text.size();
  while (at < end) {
    const void* nl = std::memchr(at, '\n', static_cast<std::size_t>(end - at));
    if (nl == nullptr) break;
    ++count;
    at = static_cast<const char*>(nl) + 1;
  }
  return count;
}

struct PipelineOptions {
  int threads = 0;              // 0: all hardware threads
  std::size_t chunk_bytes = 0;  // 0: chosen from the input size and the thread count
  std::uint64_t first_line = 1;  // the source's first line in its file (LoadOptions::first_line)
};

inline int ResolveThreads(int threads) {
  return threads > 0 ? threads : std::max(1, oneapi::tbb::info::default_concurrency());
}

// Big enough that per-chunk overhead vanishes, small enough that every thread gets several
// chunks (load balance) and that memory in flight stays a few MiB per thread.
inline std::size_t ResolveChunkBytes(std::size_t chunk_bytes, std::uint64_t size_hint, int threads) {
  if (chunk_bytes > 0) return chunk_bytes;
  constexpr std::uint64_t kMin = 256 * 1024;
  constexpr std::uint64_t kMax = 4 * 1024 * 1024;
  constexpr std::uint64_t kUnknown = 4 * 1024 * 1024;
  if (size_hint == 0) return kUnknown;
  // A small input gets one buffer of its own size, not a 256 KiB one.
  return static_cast<std::size_t>(std::min<std::uint64_t>(
      size_hint + 1,
      std::clamp<std::uint64_t>(size_hint / (16 * static_cast<std::uint64_t>(threads)), kMin, kMax)));
}

// `Result` is default-constructible with Clear(); `parse(const TextChunk&, Result&)` fills a
// cleared result and returns the chunk's '\n' count (ForEachLine's result); `consume(Result&,
// const TextChunk&)` takes what it needs from it. Results
// and text buffers are recycled through a pool of threads + 1 tokens, so their memory is
// touched once, not once per chunk.
template <typename Result, typename Parse, typename Consume>
void ParseTextChunks(ByteSource& source, const PipelineOptions& options, Parse&& parse,
                     Consume&& consume) {
  struct Token {
    TextChunk chunk;
    Result result;
    std::uint64_t lines = 0;  // newlines in the chunk
    std::optional<ParseFailure> failure;
    std::optional<SourceError> read_error;
  };
  // Raw pointers through the pipeline, owned by `tokens` below: when an exception cancels
  // the pipeline, oneTBB drops the items in flight without destroying them, so they must not
  // own anything.
  using TokenPtr = Token*;

  const int threads = ResolveThreads(options.threads);
  const std::size_t chunk_bytes = ResolveChunkBytes(options.chunk_bytes, source.SizeHint(), threads);
  const std::string& name = source.name();

  std::mutex pool_mutex;
  std::vector<std::unique_ptr<Token>> tokens;  // every token made; guarded by pool_mutex
  std::vector<TokenPtr> pool;  // tokens free for reuse; W: input and output stages; guarded

  // Input-stage state (serial, so no synchronisation).
  std::string carry;  // the unfinished last line of the previous read
  std::size_t next_index = 0;
  bool done = false;
  // Output-stage state.
  std::uint64_t next_line = options.first_line;

  // The next chunk, or nullptr at the end.
  const auto read_chunk = [&]() -> TokenPtr {
    if (done) return nullptr;
    TokenPtr token = nullptr;
    {
      const std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        token = pool.back();
        pool.pop_back();
      } else {
        token = tokens.emplace_back(std::make_unique<Token>()).get();
      }
    }
    token->failure.reset();
    token->read_error.reset();
    TextChunk& chunk = token->chunk;
    const std::size_t wanted = std::max(chunk_bytes, carry.size() + chunk_bytes);
    if (chunk.buffer.size() < wanted) chunk.buffer.Resize(wanted);
    std::memcpy(chunk.bytes(), carry.data(), carry.size());
    chunk.size = carry.size();
    carry.clear();
    std::size_t scanned = 0;  // bytes already searched for '\n'
    while (true) {
      if (chunk.buffer.size() - chunk.size < std::max<std::size_t>(1, chunk_bytes / 2)) {
        // One line longer than a chunk: keep it whole, however long, by growing the buffer.
        chunk.buffer.Resize(chunk.buffer.size() * 2);
      }
      std::size_t got = 0;
      try {
        got = source.Read(chunk.bytes() + chunk.size, chunk.buffer.size() - chunk.size);
      } catch (SourceError& e) {
        token->read_error = std::move(e);  // raised in order, after the lines before it
        done = true;
        break;
      }
      if (got == 0) {
        done = true;
        break;
      }
      chunk.size += got;
      const std::string_view fresh(chunk.bytes() + scanned, chunk.size - scanned);
      const std::size_t last_nl = fresh.rfind('\n');
      if (last_nl != std::string_view::npos) {
        const std::size_t end = scanned + last_nl + 1;
        carry.assign(chunk.bytes() + end, chunk.size - end);
        chunk.size = end;
        break;
      }
      scanned = chunk.size;
    }
    if (chunk.size == 0 && !token->read_error) return nullptr;
    chunk.index = next_index++;
    chunk.starts_file = chunk.index == 0 && options.first_line == 1;
    return token;
  };

  const auto parse_chunk = [&](TokenPtr token) {
    if (token->read_error) {
      token->lines = CountLines(token->chunk.text());  // for "after line N"
      return token;
    }
    token->result.Clear();
    try {
      token->lines = parse(token->chunk, token->result);
    } catch (ParseFailure& failure) {
      token->failure = std::move(failure);  // no later chunk is consumed: lines not needed
    }
    return token;
  };

  const auto consume_chunk = [&](TokenPtr token) {
    const std::uint64_t first_line = next_line;
    const auto fail = [&](const ParseFailure& f) {
      throw Error(ErrorCode::kBadInput,
                  name + ":" + std::to_string(first_line + f.line - 1) + ": " + f.what);
    };
    if (token->read_error) {
      const SourceError& e = *token->read_error;
      throw Error(e.code, name + ": " + e.what + " after line " +
                              std::to_string(first_line - 1 + token->lines) + ": " + e.detail);
    }
    if (token->failure) fail(*token->failure);
    try {
      consume(token->result, token->chunk);
    } catch (const ParseFailure& failure) {
      fail(failure);
    }
    next_line += token->lines;
    const std::lock_guard lock(pool_mutex);
    pool.push_back(token);
  };

  if (threads == 1) {
    // The same stages in a plain loop: no arena to start, which dominates small inputs.
    while (true) {
      TokenPtr token = read_chunk();
      if (!token) break;
      consume_chunk(parse_chunk(token));
    }
    return;
  }
  oneapi::tbb::task_arena arena(threads);
  arena.execute([&] {
    oneapi::tbb::parallel_pipeline(
        static_cast<std::size_t>(threads) + 1,
        oneapi::tbb::make_filter<void, TokenPtr>(
            oneapi::tbb::filter_mode::serial_in_order,
            [&](oneapi::tbb::flow_control& fc) {
              TokenPtr token = read_chunk();
              if (!token) fc.stop();
              return token;
            }) &
            oneapi::tbb::make_filter<TokenPtr, TokenPtr>(oneapi::tbb::filter_mode::parallel,
                                                         parse_chunk) &
            oneapi::tbb::make_filter<TokenPtr, void>(oneapi::tbb::filter_mode::serial_in_order,
                                                     consume_chunk));
  });
}

}  // namespace corral::detail
