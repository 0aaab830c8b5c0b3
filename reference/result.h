// Errors as values: a Result<T> holds either a T or an Error that names the bad field.
// Every parser and validator in collcheck returns one; nothing here aborts or throws.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace collcheck {

// What went wrong, for a person: `field` is the name the user typed (`ranks`, `dtype`),
// `message` says the value and what is allowed ("0: must be 1..4096").
struct Error {
  std::string field;
  std::string message;

  std::string text() const { return field.empty() ? message : field + " " + message; }
};

template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Validation that produces nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

}  // namespace collcheck
