// The multipart/form-data parser on well-formed, odd and malformed bodies.
#include <gtest/gtest.h>

#include "steno/core/error.h"
#include "serve/http/multipart.h"

namespace steno::serve::http {
namespace {

const std::string kCt = "multipart/form-data; boundary=XyZ";

std::string form(const std::string& parts) { return parts + "--XyZ--\r\n"; }

TEST(Multipart, ParsesFieldsAndFiles) {
  const std::string body = form(
      "--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nsteno\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.wav\"\r\n"
      "Content-Type: audio/wav\r\n\r\nRIFF\r\n--not-a-boundary\r\n\r\n");
  const auto parts = parse_form_data(body, kCt);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "model");
  EXPECT_EQ(parts[0].data, "steno");
  EXPECT_FALSE(parts[0].filename);
  EXPECT_EQ(parts[1].name, "file");
  EXPECT_EQ(parts[1].filename.value(), "a b.wav");
  EXPECT_EQ(parts[1].content_type, "audio/wav");
  EXPECT_EQ(parts[1].data, "RIFF\r\n--not-a-boundary\r\n");  // only CRLF--XyZ ends a part
  EXPECT_EQ(find_part(parts, "file"), &parts[1]);
  EXPECT_EQ(find_part(parts, "nope"), nullptr);
}

TEST(Multipart, BinaryDataAndEmptyParts) {
  static const char raw[] = "\0\r\n\xff--XyZ\r\n-";  // a boundary not preceded by CRLF is data
  const std::string bin(raw, sizeof raw - 1);
  const std::string body = form("--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + bin +
                                "\r\n--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n\r\n");
  const auto parts = parse_form_data(body, kCt);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].data, bin);
  EXPECT_EQ(parts[1].data, "");
}

TEST(Multipart, BoundaryInsideDataIsMalformed) {
  // RFC 2046: CRLF "--" boundary can only be a delimiter; followed by anything but "--", padding or CRLF it is an
  // error, not data.
  EXPECT_THROW(parse_form_data(form("--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\na\r\n--XyZZ\r\n"), kCt),
               Error);
}

TEST(Multipart, QuotedBoundaryPreambleAndEpilogue) {
  const std::string body =
      "preamble text\r\n--a'b c\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--a'b c--\r\nepilogue";
  const auto parts = parse_form_data(body, "Multipart/Form-Data; charset=utf-8; boundary=\"a'b c\"");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].data, "1");
}

TEST(Multipart, EscapedQuotesInDisposition) {
  const std::string body = form("--XyZ\r\ncontent-disposition: form-data; name=\"fi\\\"le\"; filename=\"x;y.wav\"\r\n\r\nz\r\n");
  const auto parts = parse_form_data(body, kCt);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].name, "fi\"le");
  EXPECT_EQ(parts[0].filename.value(), "x;y.wav");
}

void expect_error(const std::string& body, const std::string& content_type, const std::string& fragment) {
  try {
    parse_form_data(body, content_type);
    ADD_FAILURE() << "no error; expected one containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Multipart, RefusesMalformedBodies) {
  expect_error("x", "application/json", "expected multipart/form-data");
  expect_error("x", "multipart/form-data", "no boundary");
  expect_error("x", "multipart/form-data; boundary=" + std::string(71, 'a'), "at most 70");
  expect_error("x", "multipart/form-data; boundary=a\x01", "not allowed");
  expect_error("", kCt, "empty");
  expect_error("hello", kCt, "does not contain its boundary");
  // Cut short inside the data: the classic truncated upload.
  expect_error("--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nRIFF....", kCt, "truncated");
  // Cut short inside the headers, or right after a boundary.
  expect_error("--XyZ\r\nContent-Disposition: form-da", kCt, "truncated inside the headers");
  expect_error("--XyZ", kCt, "truncated");
  expect_error("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XyZ", kCt, "truncated");
  expect_error(form("--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n"), kCt, "no Content-Disposition");
  expect_error(form("--XyZ\r\n\r\n1\r\n"), kCt, "no Content-Disposition");
  expect_error(form("--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n"), kCt, "expected form-data");
  expect_error(form("--XyZ\r\nContent-Disposition: form-data\r\n\r\n1\r\n"), kCt, "no name");
  expect_error(form("--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n"), kCt, "unterminated");
  expect_error(form("--XyZ\r\nno colon here\r\n\r\n1\r\n"), kCt, "malformed header");
  expect_error("--XyZgarbage\r\n", kCt, "not followed by CRLF");
}

TEST(Multipart, Limits) {
  std::string many;
  for (int i = 0; i < 5; ++i) many += "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
  MultipartLimits limits;
  limits.max_parts = 4;
  EXPECT_THROW(parse_form_data(form(many), kCt, limits), Error);
  limits.max_parts = 5;
  EXPECT_EQ(parse_form_data(form(many), kCt, limits).size(), 5u);

  limits.max_part_header_bytes = 64;
  const std::string big_header = form("--XyZ\r\nContent-Disposition: form-data; name=\"" + std::string(100, 'n') +
                                      "\"\r\n\r\nv\r\n");
  try {
    parse_form_data(big_header, kCt, limits);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("headers over 64 bytes"), std::string::npos) << e.what();
  }
}

TEST(Multipart, FindsWhereAPartsDataStartsInTheFirstBytesOfABody) {
  const std::string body = "--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
                           "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
                           "Content-Type: audio/wav\r\n\r\nRIFF....WAVE and the rest of a long file";
  const size_t data = body.find("RIFF");
  EXPECT_EQ(find_part_data(body, "XyZ", "file"), data);
  EXPECT_EQ(find_part_data(body.substr(0, data + 4), "XyZ", "file"), data);  // the data itself may be cut anywhere
  EXPECT_EQ(find_part_data(body, "XyZ", "model"), body.find("whisper-1"));
  // Not reached yet, absent, or not multipart: nullopt, never an exception.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{40}, data - 10}) EXPECT_EQ(find_part_data(body.substr(0, cut), "XyZ", "file"), std::nullopt) << cut;
  EXPECT_EQ(find_part_data(body, "XyZ", "prompt"), std::nullopt);
  EXPECT_EQ(find_part_data("not a form at all", "XyZ", "file"), std::nullopt);
  EXPECT_EQ(find_part_data(body, "", "file"), std::nullopt);
}

}  // namespace
}  // namespace steno::serve::http
