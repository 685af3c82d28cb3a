// A Beast Body whose value is a BodySpool: the parser appends the body as it arrives, so an upload larger than
// upload_buffer_mb goes to a temporary file instead of memory. Included only by connection.h (Beast compiles slowly).
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <boost/system/error_code.hpp>

#include "serve/http/body_spool.h"

namespace steno::serve::http {

struct SpoolBody {
  using value_type = BodySpool;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>&, boost::system::error_code& ec) { ec = {}; }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      std::size_t n = 0;
      try {
        for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
             ++it) {
          const boost::asio::const_buffer b = *it;
          body_.append(static_cast<const char*>(b.data()), b.size());
          n += b.size();
        }
      } catch (const std::exception&) {
        // The temporary file could not be written (a full disk): the connection answers 503.
        ec = boost::system::errc::make_error_code(boost::system::errc::io_error);
        return n;
      }
      ec = {};
      return n;
    }

    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace steno::serve::http
