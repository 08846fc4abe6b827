#include "trainyard/model/state_machine.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace trainyard::model {
namespace {

using S = JobState;
using E = JobEvent;

const std::set<std::pair<S, E>>& Legal() {
  static const std::set<std::pair<S, E>> kLegal = {
      {S::kQueued, E::kPrepare},    {S::kPreparing, E::kRun},        {S::kRunning, E::kSucceed},
      {S::kQueued, E::kFail},       {S::kPreparing, E::kFail},       {S::kRunning, E::kFail},
      {S::kCancelling, E::kFail},   {S::kQueued, E::kCancel},        {S::kPreparing, E::kCancel},
      {S::kRunning, E::kCancel},    {S::kCancelling, E::kCancelled}, {S::kQueued, E::kCancelled},
      {S::kPreparing, E::kRequeue}, {S::kRunning, E::kRequeue},
  };
  return kLegal;
}

TEST(StateMachineTest, FollowsTheNormalLifecycle) {
  auto s = Transition(S::kQueued, E::kPrepare);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, S::kPreparing);
  s = Transition(*s, E::kRun);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, S::kRunning);
  s = Transition(*s, E::kSucceed);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, S::kSucceeded);
  EXPECT_TRUE(IsTerminal(*s));
}

TEST(StateMachineTest, CancelGoesThroughCancelling) {
  for (S from : {S::kQueued, S::kPreparing, S::kRunning}) {
    auto s = Transition(from, E::kCancel);
    ASSERT_TRUE(s.ok()) << JobStateName(from);
    EXPECT_EQ(*s, S::kCancelling);
    s = Transition(*s, E::kCancelled);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(*s, S::kCancelled);
  }
}

TEST(StateMachineTest, QueuedJobCanBeCancelledDirectly) {
  auto s = Transition(S::kQueued, E::kCancelled);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, S::kCancelled);
}

TEST(StateMachineTest, FailAndRequeueTargets) {
  EXPECT_EQ(*Transition(S::kRunning, E::kFail), S::kFailed);
  EXPECT_EQ(*Transition(S::kCancelling, E::kFail), S::kFailed);
  EXPECT_EQ(*Transition(S::kRunning, E::kRequeue), S::kQueued);
  EXPECT_EQ(*Transition(S::kPreparing, E::kRequeue), S::kQueued);
}

TEST(StateMachineTest, EveryPairOutsideTheTableIsRefused) {
  const E events[] = {E::kPrepare, E::kRun,       E::kSucceed, E::kFail,
                      E::kCancel,  E::kCancelled, E::kRequeue};
  for (int i = 0; i <= 7; ++i) {
    S from = static_cast<S>(i);
    for (E e : events) {
      auto r = Transition(from, e);
      EXPECT_EQ(r.ok(), Legal().count({from, e}) == 1)
          << JobStateName(from) << " " << JobEventName(e);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
        EXPECT_NE(r.status().message().find(JobStateName(from)), std::string::npos);
        EXPECT_NE(r.status().message().find(JobEventName(e)), std::string::npos);
      }
    }
  }
}

TEST(StateMachineTest, TerminalStatesAcceptNoEvent) {
  for (S from : {S::kSucceeded, S::kFailed, S::kCancelled}) {
    EXPECT_TRUE(IsTerminal(from));
    EXPECT_FALSE(Transition(from, E::kCancel).ok());
    EXPECT_FALSE(Transition(from, E::kFail).ok());
    EXPECT_FALSE(Transition(from, E::kRequeue).ok());
  }
  EXPECT_FALSE(IsTerminal(S::kCancelling));
}

TEST(StateMachineTest, StateNamesRoundTrip) {
  for (int i = 0; i <= 7; ++i) {
    S s = static_cast<S>(i);
    auto parsed = ParseJobState(JobStateName(s));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(ParseJobState("failed").has_value());
  EXPECT_FALSE(ParseJobState("").has_value());
}

}  // namespace
}  // namespace trainyard::model
