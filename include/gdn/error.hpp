#ifndef GDN_ERROR_HPP
#define GDN_ERROR_HPP

/// \file error.hpp
/// \brief The exception gdn throws for bad input.

#include <stdexcept>
#include <string>

namespace gdn {

/// \brief Thrown for any argument rejected before a launch.
///
/// The message reads `gdn::<function>: argument '<name>': expected <...>, got <...>`.
/// `function()` and `argument()` give the two names separately.
class InvalidArgument : public std::invalid_argument {
 public:
  InvalidArgument(const std::string& function, const std::string& argument,
                  const std::string& expected, const std::string& got)
      : std::invalid_argument(function + ": argument '" + argument + "': expected " + expected +
                              ", got " + got),
        m_function(function),
        m_argument(argument) {}
  /// the entry point that rejected the call, e.g. `gdn::recurrence_fwd`
  const std::string& function() const noexcept { return m_function; }
  /// the name of the rejected argument, e.g. `qkv`
  const std::string& argument() const noexcept { return m_argument; }

 private:
  std::string m_function;
  std::string m_argument;
};

}  // namespace gdn

#endif  // GDN_ERROR_HPP
